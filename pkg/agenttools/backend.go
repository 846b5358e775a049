package agenttools

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// ClientBackend is the mcpserver.Backend of a program that calls a
// sessionbox API from outside (New, `sessionbox mcp`): the tools over
// pkg/client. It lives here, not in pkg/mcpserver, so the API's Lambdas,
// which serve the tools from the Manager, do not link the HTTP client.
type ClientBackend struct {
	Client *client.Client
}

var _ mcpserver.Backend = ClientBackend{}

// Execute runs code in the session's kernel.
func (b ClientBackend) Execute(ctx context.Context, sessionID string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	return b.Client.Execute(ctx, sessionID, client.ExecuteRequest{
		Code: req.Code, TimeoutSecs: req.TimeoutSecs, Envs: req.Envs, Context: req.Context,
	}, onEvent)
}

// Install pip-installs packages into the session's sandbox.
func (b ClientBackend) Install(ctx context.Context, sessionID string, req session.InstallRequest) (*session.InstallResult, error) {
	return b.Client.Install(ctx, sessionID, req.Packages, req.IndexURL)
}

// Reset restarts the session's kernel.
func (b ClientBackend) Reset(ctx context.Context, sessionID string) error {
	return b.Client.Reset(ctx, sessionID)
}

// ListFiles lists a directory of the session's sandbox.
func (b ClientBackend) ListFiles(ctx context.Context, sessionID, dir string, depth int) ([]session.FileEntry, error) {
	return b.Client.ListFiles(ctx, sessionID, dir, depth)
}

// OpenFile opens a file of the session's sandbox, inline only: a file past
// the API's inline limit is refused with 413, which the tool explains.
func (b ClientBackend) OpenFile(ctx context.Context, sessionID, path string) (io.ReadCloser, int64, error) {
	return b.Client.OpenFile(ctx, sessionID, path)
}

// WriteFile writes a file of the session's sandbox.
func (b ClientBackend) WriteFile(ctx context.Context, sessionID, path string, data []byte) (session.FileEntry, error) {
	e, err := b.Client.Upload(ctx, sessionID, path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return session.FileEntry{}, err
	}
	return *e, nil
}

// DeleteFile removes a file or directory of the session's sandbox.
func (b ClientBackend) DeleteFile(ctx context.Context, sessionID, path string) error {
	return b.Client.DeleteFile(ctx, sessionID, path)
}

// UploadURLs fetches URLs into the session's sandbox.
func (b ClientBackend) UploadURLs(ctx context.Context, sessionID string, urls []string, destDir string) (*session.URLUploadResult, error) {
	return b.Client.UploadURLs(ctx, sessionID, urls, destDir)
}

// RunCommand runs a shell command in the session's sandbox.
func (b ClientBackend) RunCommand(ctx context.Context, sessionID string, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error) {
	return b.Client.RunCommand(ctx, sessionID, client.CommandRequest{
		Cmd: req.Cmd, Cwd: req.Cwd, Envs: req.Envs, TimeoutSecs: req.TimeoutSecs, User: req.User,
	}, onEvent)
}

// StartCommand starts a background shell command in the session's sandbox.
func (b ClientBackend) StartCommand(ctx context.Context, sessionID string, req session.CommandRequest) (*session.CommandStarted, error) {
	return b.Client.StartCommand(ctx, sessionID, client.CommandRequest{
		Cmd: req.Cmd, Cwd: req.Cwd, Envs: req.Envs, TimeoutSecs: req.TimeoutSecs, User: req.User,
	})
}

// ReadCommand reads a background command's new output.
func (b ClientBackend) ReadCommand(ctx context.Context, sessionID, commandID string, wait time.Duration) (*session.CommandOutput, error) {
	return b.Client.ReadCommandOutput(ctx, sessionID, commandID, wait)
}

// KillCommand kills a background command.
func (b ClientBackend) KillCommand(ctx context.Context, sessionID, commandID string) error {
	return b.Client.KillCommand(ctx, sessionID, commandID)
}
