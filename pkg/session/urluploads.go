package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// URLFetcher opens URLs a user names, for uploads from URLs. It refuses
// addresses the deployment may not reach (the SSRF guard) and follows a
// bounded number of redirects. Implementations: pkg/urlfetch.
type URLFetcher interface {
	// Fetch sends a GET and returns once the response headers are in.
	// Failures are *Error whose Detail names the host and the cause in
	// words a caller may see.
	Fetch(ctx context.Context, rawURL string) (*FetchedURL, error)
}

// FetchedURL is a response being fetched; the caller closes Body.
type FetchedURL struct {
	Body io.ReadCloser
	// Name is the file name the server gave (Content-Disposition), as
	// sent; "" when it gave none.
	Name string
	// Size is the announced length, -1 when unknown.
	Size int64
}

// MaxUploadURLs caps the URLs of one upload from URLs.
const MaxUploadURLs = 200

// MaxUploadURLBytes caps one URL's length: MaxUploadURLs of them fit
// the API's 1 MiB JSON body limit.
const MaxUploadURLBytes = 4096

// URLUploadConfig are the limits of uploads from URLs. Zero fields take the
// defaults documented on each.
type URLUploadConfig struct {
	// AllowPrivate lets uploads fetch from loopback, private, link-local,
	// shared and unique-local addresses. Off by default; the wiring that
	// builds the URLFetcher reads it.
	AllowPrivate bool
	// MaxFileBytes caps one file (default 5 GiB).
	MaxFileBytes int64
	// MaxTotalBytes caps the bytes of one request together (default 10 GiB).
	MaxTotalBytes int64
	// FileTimeout caps fetching and storing one file (default 10m).
	FileTimeout time.Duration
	// RequestTimeout caps one request (default 14m, within the 15 minutes
	// API Gateway gives a streamed response).
	RequestTimeout time.Duration
	// Parallelism caps the files fetched at once (default 8).
	Parallelism int
}

func (c URLUploadConfig) withDefaults() URLUploadConfig {
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = 5 << 30
	}
	if c.MaxTotalBytes == 0 {
		c.MaxTotalBytes = 10 << 30
	}
	if c.FileTimeout == 0 {
		c.FileTimeout = 10 * time.Minute
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 14 * time.Minute
	}
	if c.Parallelism == 0 {
		c.Parallelism = 8
	}
	return c
}

func (c URLUploadConfig) check() error {
	if c.MaxFileBytes < 0 || c.MaxTotalBytes < 0 || c.FileTimeout < 0 || c.RequestTimeout < 0 || c.Parallelism < 0 {
		return errors.New("session: URLUploads limits must not be negative")
	}
	return nil
}

// URLUploadRequest asks for files to be fetched into a sandbox.
type URLUploadRequest struct {
	URLs []string
	// DestDir is where the files go (default the working directory).
	DestDir string
	// OnStarted, when set, is called once the call has reached the
	// session's sandbox (started when it had none), before any fetch: as
	// an Event with Started is for the calls that stream.
	OnStarted func()
}

// URLUploadStatus sums up an upload from URLs.
type URLUploadStatus string

// The outcomes of an upload from URLs.
const (
	URLUploadSuccess        URLUploadStatus = "success"
	URLUploadPartialSuccess URLUploadStatus = "partial_success"
	URLUploadFailure        URLUploadStatus = "failure"
)

// URLUploaded is one file that landed.
type URLUploaded struct {
	SourceURL string `json:"sourceUrl"`
	Path      string `json:"path"`
	SizeBytes int64  `json:"sizeBytes"`
}

// URLUploadError is one URL that did not land, and why.
type URLUploadError struct {
	SourceURL string `json:"sourceUrl"`
	Error     string `json:"error"`
}

// URLUploadResult is the outcome of an upload from URLs, in the order of
// the URLs given.
type URLUploadResult struct {
	Status    URLUploadStatus  `json:"status"`
	Uploaded  []URLUploaded    `json:"uploaded"`
	Errors    []URLUploadError `json:"errors"`
	Restarted bool             `json:"restarted"`
}

// ValidateUploadURLs checks the URLs of an upload from URLs and names every
// bad one by its index.
func ValidateUploadURLs(urls []string) error {
	switch {
	case len(urls) == 0:
		return Errorf(ErrInvalid, "urls must hold at least one URL")
	case len(urls) > MaxUploadURLs:
		return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("urls holds %d URLs, more than the limit of %d", len(urls), MaxUploadURLs)}
	}
	var bad []string
	for i, raw := range urls {
		if err := checkUploadURL(raw); err != "" {
			bad = append(bad, fmt.Sprintf("urls[%d] %s", i, err))
		}
	}
	if len(bad) > 0 {
		return Errorf(ErrInvalid, "%s", strings.Join(bad, "; "))
	}
	return nil
}

func checkUploadURL(raw string) string {
	if len(raw) > MaxUploadURLBytes {
		return fmt.Sprintf("is longer than %d bytes", MaxUploadURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs():
		return "is not an absolute URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("has scheme %q: only http and https are fetched", u.Scheme)
	case u.Hostname() == "":
		return "has no host"
	}
	return ""
}

// UploadURLs fetches each URL and streams its body into a file of destDir,
// a bounded number at a time, in constant memory: the service fetches, so
// the sandbox needs no network. A file is named by the response's
// Content-Disposition, else by the URL's last path segment, sanitized and
// made unique within the request; an existing file of that name is
// replaced. One URL failing fails only that URL: the result lists what
// landed and what did not, in the order given. It starts the sandbox as
// writes do.
func (m *Manager) UploadURLs(ctx context.Context, key Key, req URLUploadRequest) (*URLUploadResult, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := ValidateUploadURLs(req.URLs); err != nil {
		return nil, err
	}
	dir := req.DestDir
	if dir == "" {
		dir = WorkDir
	}
	dir, err := CleanPath(dir)
	if err != nil {
		var de *Error
		if errors.As(err, &de) {
			return nil, Errorf(ErrInvalid, "destDir: %s", de.Detail)
		}
		return nil, err
	}
	if m.fetcher == nil {
		return nil, Errorf(ErrUnavailable, "uploads from URLs are not configured")
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.URLUploads.RequestTimeout)
	defer cancel()
	var outcomes []urlOutcome
	restarted, err := m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		if req.OnStarted != nil {
			req.OnStarted()
		}
		outcomes = m.fetchAll(ctx, s.SandboxID, dir, req.URLs)
		return retryableBatch(outcomes)
	})
	if err != nil {
		return nil, err
	}
	return summarize(req.URLs, outcomes, restarted), nil
}

// urlOutcome is what became of one URL.
type urlOutcome struct {
	path string
	size int64
	err  error
}

// retryableBatch lets a batch run again on a fresh sandbox when the sandbox
// went away before any file landed; once one did, the outcome stands.
func retryableBatch(outs []urlOutcome) (bool, error) {
	gone := false
	for _, o := range outs {
		if o.err == nil {
			return false, nil
		}
		gone = gone || errors.Is(o.err, ErrSandboxGone)
	}
	if gone {
		return true, ErrSandboxGone
	}
	return false, nil
}

func summarize(urls []string, outs []urlOutcome, restarted bool) *URLUploadResult {
	res := &URLUploadResult{Uploaded: []URLUploaded{}, Errors: []URLUploadError{}, Restarted: restarted}
	for i, o := range outs {
		if o.err != nil {
			res.Errors = append(res.Errors, URLUploadError{SourceURL: urls[i], Error: describeUploadError(o.err)})
			continue
		}
		res.Uploaded = append(res.Uploaded, URLUploaded{SourceURL: urls[i], Path: o.path, SizeBytes: o.size})
	}
	switch {
	case len(res.Errors) == 0:
		res.Status = URLUploadSuccess
	case len(res.Uploaded) == 0:
		res.Status = URLUploadFailure
	default:
		res.Status = URLUploadPartialSuccess
	}
	return res
}

// describeUploadError is the words a caller sees: a domain error's detail,
// never an internal chain.
func describeUploadError(err error) string {
	var de *Error
	if errors.As(err, &de) && de.Detail != "" {
		return de.Detail
	}
	switch {
	case errors.Is(err, ErrSandboxGone):
		return "the sandbox went away while the file was written"
	case errors.Is(err, ErrForbidden):
		return "the sandbox refused the file"
	}
	return "the file could not be written to the sandbox"
}

// fetchAll fetches every URL with at most Parallelism at once.
func (m *Manager) fetchAll(ctx context.Context, sandbox, dir string, urls []string) []urlOutcome {
	outs := make([]urlOutcome, len(urls))
	b := &uploadBatch{m: m, sandbox: sandbox, dir: dir, names: map[string]bool{}}
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(m.cfg.URLUploads.Parallelism, len(urls)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(urls) {
					return
				}
				outs[i] = b.fetchOne(ctx, urls[i])
			}
		})
	}
	wg.Wait()
	return outs
}

// uploadBatch is the state one request's files share: the names taken and
// the bytes spent.
type uploadBatch struct {
	m       *Manager
	sandbox string
	dir     string
	mu      sync.Mutex
	names   map[string]bool
	total   atomic.Int64
}

func (b *uploadBatch) fetchOne(parent context.Context, rawURL string) urlOutcome {
	lim := b.m.cfg.URLUploads
	if parent.Err() != nil {
		return urlOutcome{err: b.timeLimit(parent, parent)}
	}
	ctx, cancel := context.WithTimeout(parent, lim.FileTimeout)
	defer cancel()
	f, err := b.m.fetcher.Fetch(ctx, rawURL)
	if err != nil {
		if ctx.Err() != nil {
			err = b.timeLimit(parent, ctx)
		}
		return urlOutcome{err: err}
	}
	defer f.Body.Close()
	if f.Size > lim.MaxFileBytes {
		return urlOutcome{err: b.tooLargeFile(f.Size)}
	}
	if f.Size > 0 && b.total.Load()+f.Size > lim.MaxTotalBytes {
		return urlOutcome{err: b.tooLargeTotal()}
	}
	p := path.Join(b.dir, b.claim(uploadFileName(f.Name, rawURL)))
	body := &budgetReader{r: f.Body, b: b, left: lim.MaxFileBytes}
	// The write ends when the body does, so a failed fetch (a limit, the
	// source breaking off, the time limit cancelling ctx) ends it cleanly
	// and the sandbox is done with the file before it is removed; an
	// aborted write could leave the sandbox writing after the removal.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(parent), lim.FileTimeout+writeSlack)
	defer wcancel()
	werr := b.m.sandboxes.WriteFile(wctx, b.sandbox, p, body)
	switch {
	case body.err != nil:
		err = body.err
	case body.readErr != nil && ctx.Err() != nil:
		err = b.timeLimit(parent, ctx)
	case body.readErr != nil:
		err = Errorf(ErrUnavailable, "the download broke off after %d bytes", body.n)
	case werr != nil:
		err = werr
	case f.Size >= 0 && body.n != f.Size:
		err = Errorf(ErrUnavailable, "the server sent %d of the %d bytes it announced", body.n, f.Size)
	}
	if err != nil {
		b.removePartial(parent, p)
		return urlOutcome{err: err}
	}
	return urlOutcome{path: p, size: body.n}
}

// writeSlack is how long past the per-file time limit a write into the
// sandbox may take to finish once its body has ended.
const writeSlack = 30 * time.Second

// timeLimit names the limit that ended a fetch: the file's own, or the
// request's.
func (b *uploadBatch) timeLimit(parent, ctx context.Context) error {
	lim := b.m.cfg.URLUploads
	switch {
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return Errorf(ErrTimeout, "not finished within the request's time limit of %s", lim.RequestTimeout)
	case parent.Err() != nil:
		return Errorf(ErrTimeout, "the request was cancelled")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Errorf(ErrTimeout, "not finished within the per-file time limit of %s", lim.FileTimeout)
	}
	return Errorf(ErrTimeout, "the fetch was cancelled")
}

func (b *uploadBatch) tooLargeFile(size int64) error {
	return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("the file is more than the per-file limit of %d bytes (announced %d)", b.m.cfg.URLUploads.MaxFileBytes, size)}
}

func (b *uploadBatch) tooLargeTotal() error {
	return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("the files together are more than the per-request limit of %d bytes", b.m.cfg.URLUploads.MaxTotalBytes)}
}

// removePartial deletes what a failed write left behind.
func (b *uploadBatch) removePartial(ctx context.Context, p string) {
	ctx, cancel := detach(ctx)
	defer cancel()
	if err := b.m.sandboxes.RemoveFile(ctx, b.sandbox, p); err != nil && !errors.Is(err, ErrNotFound) {
		b.m.log.WarnContext(ctx, "remove partial upload from URL", "path", p, "err", err)
	}
}

// claim takes name for this request, or the first free "name (n).ext".
func (b *uploadBatch) claim(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	stem, ext := splitExt(name)
	if len(ext) > 32 {
		stem, ext = name, ""
	}
	out := name
	for n := 1; b.names[out]; n++ {
		suffix := fmt.Sprintf(" (%d)%s", n, ext)
		out = truncateUTF8(stem, maxFileNameBytes-len(suffix)) + suffix
	}
	b.names[out] = true
	return out
}

// budgetReader holds one body to the per-file limit and the request's to
// the per-request one. Whatever stops it (a limit passed, the source
// failing) is kept aside and the body simply ends, so the write into the
// sandbox completes and the caller then removes the file.
type budgetReader struct {
	r       io.Reader
	b       *uploadBatch
	left    int64
	n       int64
	err     error // a limit was passed
	readErr error // the source failed
}

func (r *budgetReader) Read(p []byte) (int, error) {
	if r.err != nil || r.readErr != nil {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	r.left -= int64(n)
	switch {
	case r.left < 0:
		r.err = r.b.tooLargeFile(r.n)
	case r.b.total.Add(int64(n)) > r.b.m.cfg.URLUploads.MaxTotalBytes:
		r.err = r.b.tooLargeTotal()
	case err != nil && err != io.EOF:
		r.readErr = err
	}
	if r.err != nil || r.readErr != nil {
		return 0, io.EOF
	}
	return n, err
}

// maxFileNameBytes is the longest name Linux file systems take.
const maxFileNameBytes = 255

// uploadFileName picks a file's name: the server's, else the URL's last
// path segment, sanitized; "download" when neither gives one.
func uploadFileName(given, rawURL string) string {
	if n := sanitizeFileName(given); n != "" {
		return n
	}
	if u, err := url.Parse(rawURL); err == nil {
		if n := sanitizeFileName(path.Base(u.Path)); n != "" {
			return n
		}
	}
	return "download"
}

// sanitizeFileName makes a name safe as one path element: the last element
// of any path it holds, no control characters or invalid UTF-8, no leading
// dots (which would hide it, or name ".." or a dotfile such as .bashrc),
// no surrounding spaces, at most 255 bytes with its extension kept.
func sanitizeFileName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if isControl(r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	name = strings.TrimSpace(name)
	if len(name) > maxFileNameBytes {
		stem, ext := splitExt(name)
		if len(ext) > 32 {
			ext = ""
		}
		name = truncateUTF8(stem, maxFileNameBytes-len(ext)) + ext
	}
	return name
}

// splitExt splits "a.tar.gz" into "a.tar" and ".gz"; a name with no dot
// past its first byte has no extension.
func splitExt(name string) (string, string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i], name[i:]
	}
	return name, ""
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
