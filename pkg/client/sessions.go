package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sessionbox/sessionbox/pkg/wire"
)

// SessionView is a session as the API describes it.
type SessionView = wire.Session

// Sessions returns one page of the caller's sessions.
func (c *Client) Sessions(ctx context.Context, limit int, cursor string) (sessions []SessionView, next string, err error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out wire.SessionList
	err = c.doJSON(ctx, http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, out.NextCursor, err
}

// StartOptions are a new sandbox's settings; zero values take the
// service's defaults. A session whose sandbox runs keeps it as it is.
type StartOptions struct {
	// Type is the kind of sandbox ("code-interpreter" unless set).
	Type     string            `json:"type,omitempty"`
	Template string            `json:"template,omitempty"`
	Envs     map[string]string `json:"envs,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// IdleTimeoutSecs is how long the sandbox may idle before it is
	// paused (Pause) or killed.
	IdleTimeoutSecs int  `json:"idleTimeoutSecs,omitempty"`
	Pause           bool `json:"pause,omitempty"`
	// Persist false keeps no workspace for the session; nil is the
	// service's default.
	Persist *bool `json:"persist,omitempty"`
}

// StartSandbox starts the session's sandbox (creating the session) unless
// it runs already.
func (c *Client) StartSandbox(ctx context.Context, sessionID string, opts StartOptions) (*SessionView, error) {
	var out SessionView
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/sandbox/start"), opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Status describes one session.
func (c *Client) Status(ctx context.Context, sessionID string) (*SessionView, error) {
	var out SessionView
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/sandbox"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Stop stops the session's sandbox, checkpointing its workspace first, and
// returns the session as it is afterwards.
func (c *Client) Stop(ctx context.Context, sessionID string) (*SessionView, error) {
	var out SessionView
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/sandbox/stop"), struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
