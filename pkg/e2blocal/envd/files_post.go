//go:build linux

package envd

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// uploadedEntry is one element of the POST /files response.
type uploadedEntry struct {
	Path     string            `json:"path"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// httpError carries the REST status an upload step failed with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func statusErr(status int, format string, args ...any) error {
	return &httpError{status: status, err: fmt.Errorf(format, args...)}
}

// handleUpload serves POST /files: multipart/form-data (each `file` part's
// filename is its full destination unless ?path= is given) or a raw
// application/octet-stream body for ?path=, optionally gzip-encoded. Bodies
// are streamed to disk, never held in memory.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	defer r.Body.Close()
	entries, err := s.upload(r)
	if err != nil {
		// Answering while the client still sends makes the server close
		// the connection under it, and the client then sees a reset rather
		// than this answer (a 507 for a full disk, say). Taking the rest
		// first, within a bound, lets it read why.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrainOnError))
		status := http.StatusInternalServerError
		var he *httpError
		if errors.As(err, &he) {
			status = he.status
		}
		writeJSONError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, entries)
}

// maxDrainOnError bounds what a failed upload reads of the body it could
// not store; past it the connection is closed.
const maxDrainOnError = 64 << 20

func (s *Server) upload(r *http.Request) ([]uploadedEntry, error) {
	if err := s.fileAuth(r, opWrite, time.Now()); err != nil {
		return nil, &httpError{http.StatusUnauthorized, err}
	}
	q := r.URL.Query()
	if err := s.checkUser(q.Get("username")); err != nil {
		return nil, &httpError{http.StatusUnauthorized, err}
	}
	md, err := metadataFromHeaders(r.Header)
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, err}
	}
	body, err := decodedBody(r)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var dest *string
	if q.Has("path") {
		p := q.Get("path")
		dest = &p
	}
	switch {
	case mediaType == "application/octet-stream":
		if dest == nil {
			return nil, statusErr(http.StatusBadRequest, "path query parameter is required for raw body upload")
		}
		entry, err := s.writeUpload(*dest, body, md)
		if err != nil {
			return nil, err
		}
		return []uploadedEntry{entry}, nil
	case strings.HasPrefix(mediaType, "multipart/"):
		return s.uploadMultipart(r, body, dest, md)
	default:
		return nil, statusErr(http.StatusBadRequest, "unsupported content type %q, expected multipart/form-data or application/octet-stream", r.Header.Get("Content-Type"))
	}
}

// decodedBody undoes a Content-Encoding: gzip request body.
func decodedBody(r *http.Request) (io.ReadCloser, error) {
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return io.NopCloser(r.Body), nil
	case "gzip", "x-gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, statusErr(http.StatusBadRequest, "invalid gzip request body: %w", err)
		}
		return gz, nil
	default:
		return nil, statusErr(http.StatusUnsupportedMediaType, "unsupported Content-Encoding %q", enc)
	}
}

func (s *Server) uploadMultipart(r *http.Request, body io.Reader, dest *string, md map[string]string) ([]uploadedEntry, error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return nil, statusErr(http.StatusBadRequest, "invalid multipart Content-Type: missing boundary")
	}
	mr := multipart.NewReader(body, params["boundary"])
	entries := []uploadedEntry{}
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, statusErr(http.StatusBadRequest, "read multipart body: %w", err)
		}
		entry, ok, err := s.uploadPart(part, dest, md, seen)
		_ = part.Close()
		if err != nil {
			return nil, err
		}
		if ok {
			entries = append(entries, entry)
		}
	}
	if len(entries) == 0 {
		return nil, statusErr(http.StatusBadRequest, "multipart body has no 'file' part")
	}
	return entries, nil
}

func (s *Server) uploadPart(part *multipart.Part, dest *string, md map[string]string, seen map[string]bool) (uploadedEntry, bool, error) {
	if part.FormName() != "file" {
		return uploadedEntry{}, false, nil
	}
	target := ""
	if dest != nil {
		target = *dest
	} else {
		name, err := partFileName(part)
		if err != nil {
			return uploadedEntry{}, false, &httpError{http.StatusBadRequest, err}
		}
		target = name
	}
	resolved, err := s.resolvePath(target)
	if err != nil {
		return uploadedEntry{}, false, &httpError{http.StatusBadRequest, err}
	}
	if seen[resolved] {
		return uploadedEntry{}, false, statusErr(http.StatusBadRequest, "you cannot upload multiple files to the same path '%s' in one upload request", resolved)
	}
	seen[resolved] = true
	entry, err := s.writeUpload(target, part, md)
	return entry, err == nil, err
}

// partFileName returns the full filename parameter of the part's
// Content-Disposition; multipart.Part.FileName would strip directories, but
// the SDK sends the destination path there.
func partFileName(part *multipart.Part) (string, error) {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return "", fmt.Errorf("invalid part Content-Disposition: %w", err)
	}
	name, ok := params["filename"]
	if !ok || name == "" {
		return "", errors.New("file part has no filename in Content-Disposition and no path query parameter was given")
	}
	return name, nil
}

// bodyReadError marks a failure reading the client's data, as opposed to
// writing it to disk.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// writeUpload streams src into the file at the client path p, creating
// parents and overwriting, then applies metadata.
func (s *Server) writeUpload(p string, src io.Reader, md map[string]string) (uploadedEntry, error) {
	path, err := s.resolvePath(p)
	if err != nil {
		return uploadedEntry{}, &httpError{http.StatusBadRequest, err}
	}
	if err := ensureParent(path); err != nil {
		return uploadedEntry{}, err
	}
	if info, err := os.Stat(path); err == nil {
		switch mode := info.Mode(); {
		case mode.IsDir():
			return uploadedEntry{}, statusErr(http.StatusBadRequest, "path is a directory: %s", path)
		case !mode.IsRegular() && mode&os.ModeCharDevice == 0:
			// A FIFO or socket would block the open or the writes.
			return uploadedEntry{}, statusErr(http.StatusBadRequest, "path is not a regular file: %s", path)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return uploadedEntry{}, &httpError{fsStatus(err), fmt.Errorf("open %s for writing: %w", path, err)}
	}
	br := &bodyReader{r: src}
	buf := s.copyBuffer()
	_, copyErr := io.CopyBuffer(writerOnly{f}, br, *buf)
	s.copyBufs.Put(buf)
	closeErr := f.Close()
	switch {
	case br.err != nil:
		return uploadedEntry{}, statusErr(http.StatusBadRequest, "read upload body for %s: %w", path, br.err)
	case copyErr != nil:
		return uploadedEntry{}, &httpError{fsStatus(copyErr), fmt.Errorf("write %s: %w", path, copyErr)}
	case closeErr != nil:
		return uploadedEntry{}, &httpError{fsStatus(closeErr), fmt.Errorf("close %s: %w", path, closeErr)}
	}
	// The upload's metadata replaces the file's, as in E2B: an upload
	// without any clears what an earlier one set.
	if err := replaceMetadata(path, md); err != nil {
		return uploadedEntry{}, &httpError{fsStatus(err), err}
	}
	return uploadedEntry{Path: path, Name: filepath.Base(path), Type: "file", Metadata: md}, nil
}

func ensureParent(path string) error {
	dir := filepath.Dir(path)
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrExist) {
		return statusErr(http.StatusBadRequest, "a parent of %s is not a directory: %w", path, err)
	}
	return &httpError{fsStatus(err), fmt.Errorf("create parent directories of %s: %w", path, err)}
}

// writerOnly hides *os.File's ReadFrom so io.CopyBuffer uses our pooled
// buffer instead of allocating its own per upload.
type writerOnly struct{ io.Writer }

const copyBufferSize = 256 << 10

func (s *Server) copyBuffer() *[]byte {
	if b, ok := s.copyBufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, copyBufferSize)
	return &b
}
