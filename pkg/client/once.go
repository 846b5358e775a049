package client

import (
	"context"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// OnceRequest is code to run once in a sandbox of its own.
type OnceRequest struct {
	Code        string            `json:"code"`
	TimeoutSecs int               `json:"timeoutSecs,omitempty"`
	Envs        map[string]string `json:"envs,omitempty"`
	// Template is the sandbox's template; the service's default when empty.
	Template string `json:"template,omitempty"`
}

// ExecuteOnce runs code in a fresh sandbox that the service kills
// afterwards; no session is involved. With onEvent it streams, as
// ExecuteOnceStream.
func (c *Client) ExecuteOnce(ctx context.Context, req OnceRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	if onEvent != nil {
		return c.ExecuteOnceStream(ctx, req, onEvent)
	}
	var out session.ExecResult
	if err := c.doJSON(ctx, http.MethodPost, "/v1/execute", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecuteOnceStream is ExecuteOnce with its output streamed to onEvent
// (which may be nil), as ExecuteStream.
func (c *Client) ExecuteOnceStream(ctx context.Context, req OnceRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	resp, err := c.postStream(ctx, "/v1/execute/stream", req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readStream(resp.Body, onEvent)
}
