package client

import (
	"context"
	"github.com/sessionbox/sessionbox/pkg/wire"
	"net/http"
	"net/url"
)

// CodeContext is an interpreter context of a session: a kernel of its own,
// with its own variables and working directory. Pass its ContextID as
// ExecuteRequest.Context. It is gone once the session's sandbox is stopped
// or replaced (410).
type CodeContext = wire.CodeContext

// CreateContext starts a context in the session's sandbox, starting the
// sandbox when needed. Empty language means python, empty cwd /home/user.
func (c *Client) CreateContext(ctx context.Context, sessionID, language, cwd string) (*CodeContext, error) {
	in := wire.ContextRequest{Language: language, Cwd: cwd}
	var out CodeContext
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/contexts"), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Contexts lists the contexts of the session's current sandbox.
func (c *Client) Contexts(ctx context.Context, sessionID string) ([]CodeContext, error) {
	var out wire.ContextList
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/contexts"), nil, &out); err != nil {
		return nil, err
	}
	return out.Contexts, nil
}

// DeleteContext shuts a context down.
func (c *Client) DeleteContext(ctx context.Context, sessionID, contextID string) error {
	return c.doJSON(ctx, http.MethodDelete, c.sessionPath(sessionID, "/contexts/"+url.PathEscape(contextID)), nil, nil)
}

// ResetContext restarts a context's kernel: its variables go.
func (c *Client) ResetContext(ctx context.Context, sessionID, contextID string) error {
	return c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/contexts/"+url.PathEscape(contextID)+"/reset"), nil, nil)
}
