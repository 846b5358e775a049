package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// CodeContext is an interpreter context of a session: a kernel of its own,
// with its own variables and working directory. Pass its ContextID as
// ExecuteRequest.Context. It is gone once the session's sandbox is stopped
// or replaced (410).
type CodeContext struct {
	ContextID string    `json:"contextId"`
	Language  string    `json:"language"`
	Cwd       string    `json:"cwd"`
	CreatedAt time.Time `json:"createdAt"`
}

// CreateContext starts a context in the session's sandbox, starting the
// sandbox when needed. Empty language means python, empty cwd /home/user.
func (c *Client) CreateContext(ctx context.Context, sessionID, language, cwd string) (*CodeContext, error) {
	in := struct {
		Language string `json:"language,omitempty"`
		Cwd      string `json:"cwd,omitempty"`
	}{language, cwd}
	var out CodeContext
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/contexts"), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Contexts lists the contexts of the session's current sandbox.
func (c *Client) Contexts(ctx context.Context, sessionID string) ([]CodeContext, error) {
	var out struct {
		Contexts []CodeContext `json:"contexts"`
	}
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
