package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

// InlineLimit is the largest file Upload and Download move through the API
// itself; larger ones go through presigned URLs. It matches the service's
// default inline limit.
const InlineLimit = session.DefaultMaxInlineFileBytes

func (c *Client) filePath(sessionID, rest, path string) string {
	return c.sessionPath(sessionID, rest+"?"+url.Values{"path": {path}}.Encode())
}

// ListFiles lists a directory of the session's sandbox (of its last
// checkpoint when it has none: ListDir says which).
func (c *Client) ListFiles(ctx context.Context, sessionID, dir string, depth int) ([]session.FileEntry, error) {
	l, err := c.ListDir(ctx, sessionID, dir, depth)
	if err != nil {
		return nil, err
	}
	return l.Entries, nil
}

// FileListing is a directory listing. Source is "workspace" when the
// session had no sandbox and the listing is its last checkpoint, taken at
// CheckpointAt; empty for the live files.
type FileListing = wire.FileList

// ListDir lists a directory and says where the listing came from.
func (c *Client) ListDir(ctx context.Context, sessionID, dir string, depth int) (*FileListing, error) {
	q := url.Values{"path": {dir}}
	if depth > 0 {
		q.Set("depth", strconv.Itoa(depth))
	}
	var out FileListing
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/files?"+q.Encode()), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteFile removes a file or a directory tree of the session's sandbox.
func (c *Client) DeleteFile(ctx context.Context, sessionID, path string) error {
	return c.doJSON(ctx, http.MethodDelete, c.filePath(sessionID, "/files", path), nil, nil)
}

// WriteFile writes size bytes from r to path through the API itself, up to
// the service's inline limit (a larger file is a 413 Problem; Upload takes
// the presigned way for those).
func (c *Client) WriteFile(ctx context.Context, sessionID, path string, r io.Reader, size int64) (*session.FileEntry, error) {
	req, err := c.newRequest(ctx, http.MethodPut, c.filePath(sessionID, "/files/content", path), r,
		http.Header{"Content-Type": {"application/octet-stream"}})
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return decodeEntry(resp.Body)
}

// UploadTicket is where to PUT a file's bytes for ImportFile.
type UploadTicket = wire.UploadTicket

// UploadURL asks for a presigned URL that takes size bytes for path;
// ImportFile then moves them into the sandbox.
func (c *Client) UploadURL(ctx context.Context, sessionID, path string, size int64) (*UploadTicket, error) {
	var t UploadTicket
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/upload-url"),
		wire.UploadURLRequest{Path: path, SizeBytes: &size}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ImportFile moves an upload made to an UploadURL ticket into the sandbox.
func (c *Client) ImportFile(ctx context.Context, sessionID, transferID string) (*session.FileEntry, error) {
	var entry session.FileEntry
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/import"),
		wire.ImportRequest{TransferID: transferID}, &entry); err != nil {
		return nil, err
	}
	return &entry, nil
}

// DownloadTicket is a presigned URL that serves one file of a sandbox.
type DownloadTicket = wire.DownloadTicket

// DownloadURL copies a file of the sandbox to blob storage and returns a
// presigned URL for it.
func (c *Client) DownloadURL(ctx context.Context, sessionID, path string) (*DownloadTicket, error) {
	var t DownloadTicket
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/download-url"), wire.DownloadURLRequest{Path: path}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Upload writes size bytes from r to path in the sandbox: inline when small,
// else straight to blob storage through a presigned URL and then imported.
func (c *Client) Upload(ctx context.Context, sessionID, path string, r io.Reader, size int64) (*session.FileEntry, error) {
	if size <= InlineLimit {
		return c.WriteFile(ctx, sessionID, path, r, size)
	}
	ticket, err := c.UploadURL(ctx, sessionID, path, size)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, ticket.Method, ticket.UploadURL, r)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	for k, v := range ticket.Headers {
		if http.CanonicalHeaderKey(k) != "Content-Length" {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upload to blob storage: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("upload to blob storage: %s", resp.Status)
	}
	return c.ImportFile(ctx, sessionID, ticket.TransferID)
}

// Download copies a file of the sandbox to w: inline when the API allows,
// else through a presigned URL.
func (c *Client) Download(ctx context.Context, sessionID, path string, w io.Writer) (int64, error) {
	body, _, err := c.OpenDownload(ctx, sessionID, path)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return io.Copy(w, body)
}

// OpenDownload opens a file of the sandbox for reading, whatever its size:
// through the API when it allows, else from blob storage through a
// presigned URL. size is the file's length, or -1 when unknown. Nothing is
// opened when the file cannot be read, so a caller can create its copy
// only once the bytes are on their way.
func (c *Client) OpenDownload(ctx context.Context, sessionID, path string) (body io.ReadCloser, size int64, err error) {
	body, size, _, err = c.OpenDownloadFrom(ctx, sessionID, path)
	return body, size, err
}

// OpenDownloadFrom is OpenDownload saying where the bytes come from: a
// session without a sandbox answers inline reads from its last checkpoint.
func (c *Client) OpenDownloadFrom(ctx context.Context, sessionID, path string) (body io.ReadCloser, size int64, src FileSource, err error) {
	body, size, src, err = c.openFile(ctx, sessionID, path)
	if !IsStatus(err, http.StatusRequestEntityTooLarge) {
		return body, size, src, err
	}
	body, size, err = c.openPresigned(ctx, sessionID, path)
	return body, size, FileSource{}, err
}

// openPresigned reads a file too large for the API through a presigned URL.
func (c *Client) openPresigned(ctx context.Context, sessionID, path string) (io.ReadCloser, int64, error) {
	ticket, err := c.DownloadURL(ctx, sessionID, path)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ticket.DownloadURL, nil)
	if err != nil {
		return nil, 0, err
	}
	blob, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("download from blob storage: %w", err)
	}
	if blob.StatusCode != http.StatusOK {
		_ = blob.Body.Close()
		return nil, 0, fmt.Errorf("download from blob storage: %s", blob.Status)
	}
	return blob.Body, blob.ContentLength, nil
}

func decodeEntry(r io.Reader) (*session.FileEntry, error) {
	var e session.FileEntry
	if err := jsonDecode(r, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
