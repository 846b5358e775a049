package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// InlineLimit is the largest file Upload and Download move through the API
// itself; larger ones go through presigned URLs. It matches the service's
// default inline limit.
const InlineLimit = session.DefaultMaxInlineFileBytes

// ListFiles lists a directory of the session's sandbox.
func (c *Client) ListFiles(ctx context.Context, sessionID, dir string, depth int) ([]session.FileEntry, error) {
	q := url.Values{"path": {dir}}
	if depth > 0 {
		q.Set("depth", strconv.Itoa(depth))
	}
	var out struct {
		Entries []session.FileEntry `json:"entries"`
	}
	err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/files?"+q.Encode()), nil, &out)
	return out.Entries, err
}

// Upload writes size bytes from r to path in the sandbox: inline when small,
// else straight to blob storage through a presigned URL and then imported.
func (c *Client) Upload(ctx context.Context, sessionID, path string, r io.Reader, size int64) (*session.FileEntry, error) {
	if size <= InlineLimit {
		resp, err := c.do(ctx, http.MethodPut, c.sessionPath(sessionID, "/files/content?"+url.Values{"path": {path}}.Encode()),
			r, http.Header{"Content-Type": {"application/octet-stream"}})
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return decodeEntry(resp.Body)
	}
	var ticket struct {
		UploadURL  string            `json:"uploadUrl"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers"`
		TransferID string            `json:"transferId"`
	}
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/upload-url"),
		map[string]any{"path": path, "sizeBytes": size}, &ticket); err != nil {
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
	var entry session.FileEntry
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/import"),
		map[string]string{"transferId": ticket.TransferID}, &entry); err != nil {
		return nil, err
	}
	return &entry, nil
}

// Download copies a file of the sandbox to w: inline when the API allows,
// else through a presigned URL.
func (c *Client) Download(ctx context.Context, sessionID, path string, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, c.sessionPath(sessionID, "/files/content?"+url.Values{"path": {path}}.Encode()), nil, nil)
	var p *Problem
	switch {
	case err == nil:
		defer resp.Body.Close()
		return io.Copy(w, resp.Body)
	case !errors.As(err, &p) || p.Status != http.StatusRequestEntityTooLarge:
		return 0, err
	}
	var ticket struct {
		DownloadURL string `json:"downloadUrl"`
	}
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/files/download-url"), map[string]string{"path": path}, &ticket); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ticket.DownloadURL, nil)
	if err != nil {
		return 0, err
	}
	blob, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("download from blob storage: %w", err)
	}
	defer blob.Body.Close()
	if blob.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("download from blob storage: %s", blob.Status)
	}
	return io.Copy(w, blob.Body)
}

func decodeEntry(r io.Reader) (*session.FileEntry, error) {
	var e session.FileEntry
	if err := jsonDecode(r, &e); err != nil {
		return nil, err
	}
	return &e, nil
}
