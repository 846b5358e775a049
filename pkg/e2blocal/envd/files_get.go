//go:build linux

package envd

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// handleDownload serves GET /files: the raw file through http.ServeContent
// (Range and conditional requests work), or gzip-compressed on request.
func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request) {
	if err := s.fileAuth(r, opRead, time.Now()); err != nil {
		writeJSONError(w, http.StatusUnauthorized, err)
		return
	}
	q := r.URL.Query()
	if err := s.checkUser(q.Get("username")); err != nil {
		writeJSONError(w, http.StatusUnauthorized, err)
		return
	}
	path, err := s.resolvePath(r.Context(), q.Get("path"))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err)
		return
	}
	f, info, err := openRegular(path)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			writeJSONError(w, he.status, err)
			return
		}
		writeJSONError(w, fsStatus(err), err)
		return
	}
	defer f.Close()
	useGzip, err := wantsGzip(r.Header.Values("Accept-Encoding"))
	if err != nil {
		writeJSONError(w, http.StatusNotAcceptable, err)
		return
	}
	name := filepath.Base(path)
	w.Header().Set("Vary", "Accept-Encoding")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	// Range and conditional requests need ServeContent's identity semantics;
	// Accept-Encoding is advisory, so they are served uncompressed.
	if useGzip && !hasRangeOrConditional(r) {
		s.serveGzip(w, r, name, f)
		return
	}
	http.ServeContent(w, r, name, info.ModTime(), f)
}

func hasRangeOrConditional(r *http.Request) bool {
	for _, h := range []string{"Range", "If-Range", "If-Modified-Since", "If-None-Match", "If-Match", "If-Unmodified-Since"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

func (s *Server) serveGzip(w http.ResponseWriter, r *http.Request, name string, f *os.File) {
	ctype := mime.TypeByExtension(filepath.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	gz := s.gzipWriter(w)
	defer s.gzWriters.Put(gz)
	// Once the status is out an I/O error can only truncate the stream; the
	// client's gzip reader then reports it.
	if _, err := io.Copy(gz, f); err != nil {
		return
	}
	_ = gz.Close()
}

// wantsGzip reads Accept-Encoding: gzip when acceptable, identity otherwise,
// and an error when the client accepts neither.
func wantsGzip(values []string) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	q := map[string]float64{}
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			coding, weight, err := parseCoding(item)
			if err != nil {
				return false, err
			}
			if coding != "" {
				q[coding] = weight
			}
		}
	}
	weight := func(c string) float64 {
		if w, ok := q[c]; ok {
			return w
		}
		if w, ok := q["*"]; ok {
			return w
		}
		if c == "identity" {
			return 1
		}
		return 0
	}
	switch {
	case weight("gzip") > 0:
		return true, nil
	case weight("identity") > 0:
		return false, nil
	default:
		return false, errors.New("no acceptable content encoding: supported are gzip and identity")
	}
}

func parseCoding(item string) (string, float64, error) {
	parts := strings.Split(item, ";")
	coding := strings.ToLower(strings.TrimSpace(parts[0]))
	weight := 1.0
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 {
			return "", 0, fmt.Errorf("invalid quality value in Accept-Encoding: %q", item)
		}
		weight = f
	}
	return coding, weight, nil
}

// gzipWriter reuses compressors: each holds about a megabyte of state, which
// would otherwise dominate the cost of small downloads.
func (s *Server) gzipWriter(w io.Writer) *gzip.Writer {
	if gz, ok := s.gzWriters.Get().(*gzip.Writer); ok {
		gz.Reset(w)
		return gz
	}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a constant valid level never fails
	return gz
}

// openRegular opens a regular file for download. Directories, FIFOs and
// devices are refused: a FIFO would block the open and a device such as
// /dev/zero would stream forever.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("stat '%s': %w", path, err)
	} else if info.IsDir() {
		return nil, nil, statusErr(http.StatusBadRequest, "path '%s' is a directory", path)
	} else if !info.Mode().IsRegular() {
		return nil, nil, statusErr(http.StatusBadRequest, "path '%s' is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open '%s': %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("stat '%s': %w", path, err)
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, statusErr(http.StatusBadRequest, "path '%s' is not a regular file", path)
	}
	return f, info, nil
}
