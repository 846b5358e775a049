package client

import (
	"context"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Checkpoint saves the session's workspace (/home/user) now; the session
// needs a live sandbox.
func (c *Client) Checkpoint(ctx context.Context, sessionID string) (*session.CheckpointInfo, error) {
	var out session.CheckpointInfo
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/checkpoint"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSession removes the session, its sandbox and its workspace.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	return c.doJSON(ctx, http.MethodDelete, c.sessionPath(sessionID, ""), nil, nil)
}
