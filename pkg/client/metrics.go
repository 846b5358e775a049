package client

import (
	"context"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Metrics returns the resource use of the session's sandbox: its newest
// sample and those of the last few minutes. It starts nothing; a session
// without a live sandbox is a 404 problem.
func (c *Client) Metrics(ctx context.Context, sessionID string) (*session.SandboxMetrics, error) {
	var out session.SandboxMetrics
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/sandbox/metrics"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
