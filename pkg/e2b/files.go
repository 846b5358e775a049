package e2b

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// Filesystem reads and writes files in a sandbox through envd.
type Filesystem struct{ sb *Sandbox }

// FileOptions are the options shared by filesystem calls.
type FileOptions struct {
	// User owns created files and is the base of relative paths; empty
	// means the sandbox's default user.
	User string
}

// ReadOptions tune Read.
type ReadOptions struct {
	User string
	// Gzip asks envd to compress the transfer; the reader still yields the
	// original bytes. Worth it for large text over slow links.
	Gzip bool
}

// Read opens a file for streaming. The caller must Close the reader; the
// file is never held in memory. Missing files match ErrNotFound, directories
// ErrInvalidArgument.
func (f *Filesystem) Read(ctx context.Context, path string, opts ReadOptions) (io.ReadCloser, error) {
	const op = "files.read"
	q := url.Values{"path": {path}}
	if u := f.sb.user(opts.User); u != "" {
		q.Set("username", u)
	}
	var body io.ReadCloser
	err := f.sb.client.withRetry(ctx, true, func(ctx context.Context) error {
		var err error
		body, err = f.readAttempt(ctx, op, q, opts.Gzip)
		return err
	})
	if err != nil {
		return nil, wrapErr(op, f.sb.ID, err)
	}
	return body, nil
}

func (f *Filesystem) readAttempt(ctx context.Context, op string, q url.Values, gz bool) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	timer := f.sb.client.startStreamTimer(cancel)
	req, err := f.sb.envd.request(ctx, http.MethodGet, "/files?"+q.Encode(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	// An explicit encoding stops net/http from negotiating gzip on its own:
	// compressing large binary files costs the sandbox CPU for nothing.
	req.Header.Set("Accept-Encoding", "identity")
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := f.sb.envd.http.Do(req)
	timer.stop()
	if err != nil {
		cancel()
		if timer.timedOut() {
			return nil, timeoutErr(op, f.sb.ID, err)
		}
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer cancel()
		defer drainClose(resp.Body)
		return nil, envdError(op, f.sb.ID, resp)
	}
	rc := &cancelReadCloser{ReadCloser: resp.Body, cancel: cancel}
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return &gzipReadCloser{Reader: zr, body: rc}, nil
	}
	return rc, nil
}

// cancelReadCloser releases the request's context when the body is closed.
type cancelReadCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelReadCloser) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

type gzipReadCloser struct {
	*gzip.Reader
	body io.Closer
}

func (g *gzipReadCloser) Close() error {
	g.Reader.Close()
	return g.body.Close()
}

// WriteOptions tune Write and WriteFiles.
type WriteOptions struct {
	User string
	// Metadata is stored with each written file (extended attributes) and
	// returned in EntryInfo.Metadata. Needs envd >= 0.6.2.
	Metadata map[string]string
}

// Write streams r into the file at path, creating parent directories and
// replacing an existing file. The upload is sent as it is read
// (application/octet-stream; a one-part multipart form on envd before
// 0.5.7, which takes nothing else, as the official SDKs do); a failed write
// is not retried because r cannot be rewound.
func (f *Filesystem) Write(ctx context.Context, path string, r io.Reader, opts WriteOptions) (*EntryInfo, error) {
	const op = "files.write"
	if r == nil {
		r = http.NoBody
	}
	q := url.Values{"path": {path}}
	if u := f.sb.user(opts.User); u != "" {
		q.Set("username", u)
	}
	if !f.sb.hasEnvd(envdOctetUpload) {
		entries, err := f.multipartUpload(ctx, op, q, []WriteEntry{{Path: path, Data: r}}, opts)
		if err != nil {
			return nil, err
		}
		return &entries[0], nil
	}
	req, err := f.sb.envd.request(ctx, http.MethodPost, "/files?"+q.Encode(), r)
	if err != nil {
		return nil, wrapErr(op, f.sb.ID, err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	setMetadataHeaders(req.Header, opts.Metadata)
	entries, err := f.upload(op, req)
	if err != nil {
		return nil, err
	}
	return &entries[0], nil
}

// WriteEntry is one file of WriteFiles.
type WriteEntry struct {
	Path string
	Data io.Reader
}

// WriteFiles uploads several files in one multipart request, streaming each
// reader in turn.
func (f *Filesystem) WriteFiles(ctx context.Context, files []WriteEntry, opts WriteOptions) ([]EntryInfo, error) {
	const op = "files.writeFiles"
	if len(files) == 0 {
		return nil, nil
	}
	q := url.Values{}
	if u := f.sb.user(opts.User); u != "" {
		q.Set("username", u)
	}
	return f.multipartUpload(ctx, op, q, files, opts)
}

// multipartUpload sends files as one multipart form with query q, streaming
// each reader in turn.
func (f *Filesystem) multipartUpload(ctx context.Context, op string, q url.Values, files []WriteEntry, opts WriteOptions) ([]EntryInfo, error) {
	if err := checkPartNames(files); err != nil {
		return nil, &Error{Op: op, SandboxID: f.sb.ID, Message: err.Error(), kinds: []error{ErrInvalidArgument}}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeParts(mw, files))
	}()
	defer func() { <-done }()
	defer pr.Close() // unblocks the writer if the request ended early
	req, err := f.sb.envd.request(ctx, http.MethodPost, "/files?"+q.Encode(), pr)
	if err != nil {
		return nil, wrapErr(op, f.sb.ID, err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	setMetadataHeaders(req.Header, opts.Metadata)
	return f.upload(op, req)
}

// writeParts writes one "file" part per entry; envd takes the destination
// from each part's filename, which must be the full path.
func writeParts(mw *multipart.Writer, files []WriteEntry) error {
	for _, fe := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+quoteEscaper.Replace(fe.Path)+`"`)
		h.Set("Content-Type", "application/octet-stream")
		part, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if fe.Data != nil {
			if _, err := io.Copy(part, fe.Data); err != nil {
				return fmt.Errorf("read %s: %w", fe.Path, err)
			}
		}
	}
	return mw.Close()
}

// quoteEscaper escapes a quoted header parameter the way multipart parsers
// unescape it: only backslash and double quote. Go's %q would also write
// \t, \xNN and \uNNNN escapes, which parsers keep literally.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// checkPartNames refuses paths a header cannot carry: a CR or LF would end
// the Content-Disposition line and corrupt the request.
func checkPartNames(files []WriteEntry) error {
	for _, fe := range files {
		if strings.ContainsAny(fe.Path, "\r\n") {
			return fmt.Errorf("path %q contains a line break, which multipart uploads cannot carry", fe.Path)
		}
	}
	return nil
}

func setMetadataHeaders(h http.Header, md map[string]string) {
	for k, v := range md {
		h.Set("X-Metadata-"+k, v)
	}
}

// upload sends an upload request and decodes envd's entry list.
func (f *Filesystem) upload(op string, req *http.Request) ([]EntryInfo, error) {
	resp, err := f.sb.envd.http.Do(req)
	if err != nil {
		return nil, wrapErr(op, f.sb.ID, err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, envdError(op, f.sb.ID, resp)
	}
	var entries []EntryInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAPIBody)).Decode(&entries); err != nil {
		return nil, wrapErr(op, f.sb.ID, fmt.Errorf("decode response: %w", err))
	}
	if len(entries) == 0 {
		return nil, &Error{Op: op, SandboxID: f.sb.ID, Message: "envd returned no entries"}
	}
	return entries, nil
}

// ReadAll is a convenience for small files: Read and io.ReadAll.
func (f *Filesystem) ReadAll(ctx context.Context, path string, opts ReadOptions) ([]byte, error) {
	rc, err := f.Read(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, wrapErr("files.read", f.sb.ID, err)
	}
	return b, nil
}

// errNoAccessToken is returned when a signed URL is asked with an expiry for
// a sandbox that has no access token to sign with.
var errNoAccessToken = errors.New("e2b: sandbox has no access token; signed URLs with expiration need a secured sandbox")
