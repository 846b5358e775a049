package client

import (
	"context"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

// Install pip-installs packages (names and version specifiers) into the
// session's sandbox; indexURL, when set, replaces PyPI.
func (c *Client) Install(ctx context.Context, sessionID string, packages []string, indexURL string) (*session.InstallResult, error) {
	in := wire.InstallRequest{Packages: packages, IndexURL: indexURL}
	var out wire.InstallResult
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/install"), in, &out); err != nil {
		return nil, err
	}
	return &session.InstallResult{Success: out.Success, ExitCode: out.ExitCode, Stdout: out.Stdout, Stderr: out.Stderr,
		DurationMs: out.DurationMs, Truncated: out.Truncated, Restarted: out.Restarted, Restored: out.Restored}, nil
}

// InstallStream is Install with pip's output streamed to onEvent (which
// may be nil) as it happens.
func (c *Client) InstallStream(ctx context.Context, sessionID string, packages []string, indexURL string, onEvent func(session.Event)) (*session.InstallResult, error) {
	in := wire.InstallRequest{Packages: packages, IndexURL: indexURL}
	resp, err := c.postStream(ctx, c.sessionPath(sessionID, "/install/stream"), in)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readInstallStream(resp.Body, onEvent)
}

// Reset restarts the session's Python kernel: variables and imports are
// gone, files stay.
func (c *Client) Reset(ctx context.Context, sessionID string) error {
	return c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/reset"), nil, nil)
}
