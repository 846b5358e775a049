package client

import (
	"bytes"
	"context"
	"encoding/json"
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
// afterwards; no session is involved. With onEvent it streams, as Execute.
func (c *Client) ExecuteOnce(ctx context.Context, req OnceRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	const path = "/v1/execute"
	if onEvent == nil {
		var out session.ExecResult
		if err := c.doJSON(ctx, http.MethodPost, path, req, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, path+"/stream", bytes.NewReader(b),
		http.Header{"Accept": {"application/x-ndjson"}, "Content-Type": {"application/json"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readStream(resp.Body, onEvent)
}
