package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/sessionbox/sessionbox/pkg/wire"
)

// RunRequest is code to run in the background.
type RunRequest struct {
	Code        string `json:"code"`
	TimeoutSecs int    `json:"timeoutSecs,omitempty"`
	// IdempotencyKey, when set, makes a repeated submission return the
	// run the first one made.
	IdempotencyKey string `json:"-"`
}

// RunAccepted is the answer to a submitted run.
type RunAccepted = wire.RunAccepted

// SubmitRun queues code to run in the session and returns at once; GetRun
// follows the run.
func (c *Client) SubmitRun(ctx context.Context, sessionID string, req RunRequest) (*RunAccepted, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
	if req.IdempotencyKey != "" {
		h.Set("Idempotency-Key", req.IdempotencyKey)
	}
	resp, err := c.do(ctx, http.MethodPost, c.sessionPath(sessionID, "/runs"), bytes.NewReader(b), h)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out RunAccepted
	if err := jsonDecode(resp.Body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Run is a run as the API describes it.
type Run = wire.Run

// GetRun describes a run, with its result once it has finished.
func (c *Client) GetRun(ctx context.Context, runID string) (*Run, error) {
	var out Run
	if err := c.doJSON(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(runID), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WaitRun polls a run every interval until it has finished or ctx ends.
func (c *Client) WaitRun(ctx context.Context, runID string, interval time.Duration) (*Run, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		run, err := c.GetRun(ctx, runID)
		if err != nil || run.Status.Done() {
			return run, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
