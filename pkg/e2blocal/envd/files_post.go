//go:build linux

package envd

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
		entry, err := s.writeUpload(r.Context(), *dest, body, md)
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
		entry, ok, err := s.uploadPart(r.Context(), part, dest, md, seen)
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

func (s *Server) uploadPart(ctx context.Context, part *multipart.Part, dest *string, md map[string]string, seen map[string]bool) (uploadedEntry, bool, error) {
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
	resolved, err := s.resolvePath(ctx, target)
	if err != nil {
		return uploadedEntry{}, false, &httpError{http.StatusBadRequest, err}
	}
	if seen[resolved] {
		return uploadedEntry{}, false, statusErr(http.StatusBadRequest, "you cannot upload multiple files to the same path '%s' in one upload request", resolved)
	}
	seen[resolved] = true
	entry, err := s.writeUpload(ctx, target, part, md)
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
// parents and replacing the file, then applies metadata. See atomicWrite
// for how a failed write leaves the old file whole.
func (s *Server) writeUpload(ctx context.Context, p string, src io.Reader, md map[string]string) (uploadedEntry, error) {
	path, err := s.resolvePath(ctx, p)
	if err != nil {
		return uploadedEntry{}, &httpError{http.StatusBadRequest, err}
	}
	if err := s.ensureParent(ctx, path); err != nil {
		return uploadedEntry{}, err
	}
	target, err := followLinks(path)
	if err != nil {
		return uploadedEntry{}, &httpError{fsStatus(err), fmt.Errorf("resolve %s: %w", path, err)}
	}
	if info, err := os.Stat(target); err == nil {
		switch mode := info.Mode(); {
		case mode.IsDir():
			return uploadedEntry{}, statusErr(http.StatusBadRequest, "path is a directory: %s", path)
		case !mode.IsRegular() && mode&os.ModeCharDevice == 0:
			// A FIFO or socket would block the open or the writes.
			return uploadedEntry{}, statusErr(http.StatusBadRequest, "path is not a regular file: %s", path)
		}
	}
	buf := s.copyBuffer()
	defer s.copyBufs.Put(buf)
	if err := atomicWrite(target, src, *buf, md); err != nil {
		return uploadedEntry{}, err
	}
	return uploadedEntry{Path: path, Name: filepath.Base(path), Type: "file", Metadata: md}, nil
}

// uploadTempPrefix starts the names of files an upload is being written
// to; listings and watches leave them out. What follows tells whether the
// upload replaces a file or makes a new one, so a watcher seeing the hidden
// file renamed into place can report what E2B's in-place write reports
// (watch.go).
const (
	uploadTempPrefix  = ".sbx-upload-"
	uploadTempNew     = uploadTempPrefix + "n-"
	uploadTempReplace = uploadTempPrefix + "r-"
)

// isUploadTemp reports a name atomicWrite writes aside under.
func isUploadTemp(name string) bool { return strings.HasPrefix(name, uploadTempPrefix) }

// uploadTempReplaces reports a hidden upload file that replaces a file.
func uploadTempReplaces(name string) bool { return strings.HasPrefix(name, uploadTempReplace) }

// maxLinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxLinkHops = 40

// followLinks resolves path's final symlinks to the file a direct open
// would write: a link to a missing file resolves to where it points.
func followLinks(path string) (string, error) {
	for range maxLinkHops {
		info, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if info.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = filepath.Clean(dest)
	}
	return "", syscall.ELOOP
}

// atomicWrite makes src the content of target, a regular file, a missing
// one or a character device. The body goes to a hidden file in target's
// directory (the same file system) that is renamed over target once all
// of it is written, so a body that breaks off, exceeds a limit or meets a
// full disk leaves the old file (or none) as it was, and the hidden file
// is removed. The result has the owner and mode a direct write gives: a
// new file is the writer's, with 0666 less the umask; a replaced one keeps
// its owner, group and permission bits (less set-user/group-ID, which a
// write clears). A direct write happens instead, in place, where renaming
// would change more than the content: a character device; a file with
// other hard links, so all its names keep seeing one file; a file whose
// owner the writer cannot give the new one; and a directory the writer may
// not create files in but holding a file it may write, which E2B's envd
// writes too.
func atomicWrite(target string, src io.Reader, buf []byte, md map[string]string) error {
	existing, err := os.OpenFile(target, os.O_WRONLY|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	case err != nil:
		return &httpError{fsStatus(err), fmt.Errorf("open %s for writing: %w", target, err)}
	default:
		defer existing.Close()
	}
	var st unix.Stat_t
	if existing != nil {
		if err := unix.Fstat(int(existing.Fd()), &st); err != nil {
			return &httpError{http.StatusInternalServerError, fmt.Errorf("stat %s: %w", target, err)}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
			return writeInPlace(existing, target, src, buf, md)
		}
	}
	tmp, err := createAside(target, existing != nil)
	if err != nil {
		if existing != nil && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
			return writeInPlace(existing, target, src, buf, md)
		}
		return &httpError{fsStatus(err), fmt.Errorf("create %s: %w", target, err)}
	}
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if existing != nil {
		if err := keepOwnerAndMode(tmp, &st); errors.Is(err, fs.ErrPermission) {
			return writeInPlace(existing, target, src, buf, md)
		} else if err != nil {
			return &httpError{fsStatus(err), fmt.Errorf("set mode of %s: %w", target, err)}
		}
	}
	if err := copyBody(tmp, target, src, buf); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return &httpError{fsStatus(err), fmt.Errorf("close %s: %w", target, err)}
	}
	// The upload's metadata replaces the file's, as in E2B: an upload
	// without any clears what an earlier one set.
	if err := replaceMetadata(tmp.Name(), md); err != nil {
		return &httpError{fsStatus(err), err}
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return &httpError{fsStatus(err), fmt.Errorf("replace %s: %w", target, err)}
	}
	committed = true
	return nil
}

// createAside creates the hidden file target's body is written to. A new
// file gets the mode a direct create would (0666 less the umask); one
// replacing a file starts private until it gets the old one's mode.
func createAside(target string, replacing bool) (*os.File, error) {
	perm, prefix := os.FileMode(0o666), uploadTempNew
	if replacing {
		perm, prefix = 0o600, uploadTempReplace
	}
	var rnd [8]byte
	for range 5 {
		_, _ = rand.Read(rnd[:])
		name := filepath.Join(filepath.Dir(target), prefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free name beside %s", target)
}

// keepOwnerAndMode gives tmp the owner, group and permission bits of the
// file it replaces.
func keepOwnerAndMode(tmp *os.File, st *unix.Stat_t) error {
	var now unix.Stat_t
	if err := unix.Fstat(int(tmp.Fd()), &now); err != nil {
		return err
	}
	if now.Uid != st.Uid || now.Gid != st.Gid {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	return tmp.Chmod(os.FileMode(st.Mode&0o777) | stickyBit(st.Mode))
}

func stickyBit(mode uint32) os.FileMode {
	if mode&unix.S_ISVTX != 0 {
		return os.ModeSticky
	}
	return 0
}

// writeInPlace truncates the open file and writes the body into it, as a
// direct write does; a failure leaves what was written.
func writeInPlace(f *os.File, target string, src io.Reader, buf []byte, md map[string]string) error {
	if err := f.Truncate(0); err != nil && !errors.Is(err, syscall.EINVAL) {
		return &httpError{fsStatus(err), fmt.Errorf("truncate %s: %w", target, err)}
	}
	if err := copyBody(f, target, src, buf); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return &httpError{fsStatus(err), fmt.Errorf("close %s: %w", target, err)}
	}
	if err := replaceMetadata(target, md); err != nil {
		return &httpError{fsStatus(err), err}
	}
	return nil
}

// copyBody copies the upload body into f, telling a broken body (400)
// from a failed write.
func copyBody(f *os.File, target string, src io.Reader, buf []byte) error {
	br := &bodyReader{r: src}
	_, err := io.CopyBuffer(writerOnly{f}, br, buf)
	switch {
	case br.err != nil:
		return statusErr(http.StatusBadRequest, "read upload body for %s: %w", target, br.err)
	case errors.Is(err, syscall.EFBIG):
		// Still 507 (the SDKs' NotEnoughSpaceError), but saying which
		// limit it is: the disk may have room to spare.
		return &httpError{http.StatusInsufficientStorage, fmt.Errorf("write %s: %s", target, fileSizeLimit())}
	case err != nil:
		return &httpError{fsStatus(err), fmt.Errorf("write %s: %w", target, err)}
	}
	return nil
}

// fileSizeLimitPhrase starts the message of a write past the sandbox's
// per-file size limit (RLIMIT_FSIZE), which clients may match.
const fileSizeLimitPhrase = "the file would pass the sandbox's per-file size limit"

// fileSizeLimit describes the per-file size limit this process runs under.
func fileSizeLimit() string {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return fileSizeLimitPhrase
	}
	if lim.Cur%(1<<20) == 0 {
		return fmt.Sprintf("%s of %d MiB", fileSizeLimitPhrase, lim.Cur>>20)
	}
	return fmt.Sprintf("%s of %d bytes", fileSizeLimitPhrase, lim.Cur)
}

// ensureParent makes the missing parents of an upload's path (see
// ensureDirs: as E2B, they are made by root for the requesting user).
func (s *Server) ensureParent(ctx context.Context, path string) error {
	err := s.ensureDirs(ctx, filepath.Dir(path))
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
