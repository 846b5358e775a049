package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"
)

// OpenFile opens a file of the sandbox through the API itself; size is its
// length, or -1 when the answer does not say. A file past the inline limit
// is a *Problem of status 413 (Download takes the presigned way instead).
func (c *Client) OpenFile(ctx context.Context, sessionID, path string) (body io.ReadCloser, size int64, err error) {
	body, size, _, err = c.openFile(ctx, sessionID, path)
	return body, size, err
}

// FileSource says where a read was answered from. Workspace is true when
// the session had no sandbox (stopped, or its sandbox gone) and the service
// answered from its last checkpoint, taken at CheckpointAt.
type FileSource struct {
	Workspace    bool
	CheckpointAt time.Time
}

func (c *Client) openFile(ctx context.Context, sessionID, path string) (io.ReadCloser, int64, FileSource, error) {
	resp, err := c.do(ctx, http.MethodGet, c.sessionPath(sessionID, "/files/content?"+url.Values{"path": {path}}.Encode()), nil, nil)
	if err != nil {
		return nil, 0, FileSource{}, err
	}
	return resp.Body, resp.ContentLength, sourceOf(resp.Header), nil
}

// sourceOf reads the headers a read from a checkpointed workspace carries.
func sourceOf(h http.Header) FileSource {
	if h.Get("X-Sessionbox-Source") != "workspace" {
		return FileSource{}
	}
	at, _ := time.Parse(time.RFC3339Nano, h.Get("X-Sessionbox-Checkpoint-At"))
	return FileSource{Workspace: true, CheckpointAt: at}
}
