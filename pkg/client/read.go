package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// OpenFile opens a file of the sandbox through the API itself; size is its
// length, or -1 when the answer does not say. A file past the inline limit
// is a *Problem of status 413 (Download takes the presigned way instead).
func (c *Client) OpenFile(ctx context.Context, sessionID, path string) (body io.ReadCloser, size int64, err error) {
	resp, err := c.do(ctx, http.MethodGet, c.sessionPath(sessionID, "/files/content?"+url.Values{"path": {path}}.Encode()), nil, nil)
	if err != nil {
		return nil, 0, err
	}
	return resp.Body, resp.ContentLength, nil
}
