package mcpserver

import (
	"context"
	"io"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Backend is what the tools need of sessionbox, one session id per call.
// The API serves it from the Manager in process (ManagerBackend) and the
// stdio server from a client of a running API (agenttools.ClientBackend,
// kept out of this package so no Lambda links the HTTP client), so both
// transports run the same tools over the same domain calls.
type Backend interface {
	// Execute runs code; onEvent, when not nil, gets its output as it
	// happens.
	Execute(ctx context.Context, sessionID string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error)
	Install(ctx context.Context, sessionID string, req session.InstallRequest) (*session.InstallResult, error)
	Reset(ctx context.Context, sessionID string) error
	ListFiles(ctx context.Context, sessionID, dir string, depth int) ([]session.FileEntry, error)
	// OpenFile opens a file of the sandbox for reading; size is its length,
	// or -1 when unknown.
	OpenFile(ctx context.Context, sessionID, path string) (body io.ReadCloser, size int64, err error)
	WriteFile(ctx context.Context, sessionID, path string, data []byte) (session.FileEntry, error)
	// DeleteFile removes a file, or a directory with its contents.
	DeleteFile(ctx context.Context, sessionID, path string) error
	// UploadURLs has the service fetch each URL into destDir of the
	// sandbox ("" for the working directory).
	UploadURLs(ctx context.Context, sessionID string, urls []string, destDir string) (*session.URLUploadResult, error)
	// RunCommand runs a shell command to its end; onEvent, when not nil,
	// gets its output as it happens.
	RunCommand(ctx context.Context, sessionID string, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error)
	// StartCommand starts a shell command in the background.
	StartCommand(ctx context.Context, sessionID string, req session.CommandRequest) (*session.CommandStarted, error)
	// ReadCommand gets a background command's output not yet read,
	// waiting up to wait for its end.
	ReadCommand(ctx context.Context, sessionID, commandID string, wait time.Duration) (*session.CommandOutput, error)
	// KillCommand kills a background command.
	KillCommand(ctx context.Context, sessionID, commandID string) error
}

// Manager is the part of *session.Manager a ManagerBackend calls.
type Manager interface {
	Execute(ctx context.Context, key session.Key, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error)
	Reset(ctx context.Context, key session.Key) error
	Install(ctx context.Context, key session.Key, req session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error)
	ListFiles(ctx context.Context, key session.Key, dir string, depth int) ([]session.FileEntry, error)
	ReadFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, session.FileEntry, error)
	ListSavedFiles(ctx context.Context, key session.Key, dir string, depth int) (*session.SavedListing, error)
	ReadSavedFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, *session.SavedFile, error)
	WriteFile(ctx context.Context, key session.Key, path string, r io.Reader) (session.FileEntry, error)
	DeleteFile(ctx context.Context, key session.Key, path string) error
	UploadURLs(ctx context.Context, key session.Key, req session.URLUploadRequest) (*session.URLUploadResult, error)
	RunCommand(ctx context.Context, key session.Key, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error)
	StartCommand(ctx context.Context, key session.Key, req session.CommandRequest) (*session.CommandStarted, error)
	ReadCommand(ctx context.Context, key session.Key, commandID string, wait time.Duration) (*session.CommandOutput, error)
	KillCommand(ctx context.Context, key session.Key, commandID string) error
}

var _ Manager = (*session.Manager)(nil)

// ManagerBackend serves the tools from the Manager for one authenticated
// caller: every session it reaches is keyed by that tenant and principal.
type ManagerBackend struct {
	Manager   Manager
	Tenant    string
	Principal string
}

func (b ManagerBackend) key(sessionID string) session.Key {
	return session.Key{Tenant: b.Tenant, Principal: b.Principal, SessionID: sessionID}
}

// Execute runs code in the session's kernel.
func (b ManagerBackend) Execute(ctx context.Context, sessionID string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	return b.Manager.Execute(ctx, b.key(sessionID), req, onEvent)
}

// Install pip-installs packages into the session's sandbox.
func (b ManagerBackend) Install(ctx context.Context, sessionID string, req session.InstallRequest) (*session.InstallResult, error) {
	return b.Manager.Install(ctx, b.key(sessionID), req, nil)
}

// Reset restarts the session's kernel.
func (b ManagerBackend) Reset(ctx context.Context, sessionID string) error {
	return b.Manager.Reset(ctx, b.key(sessionID))
}

// ListFiles lists a directory of the session's sandbox, or of its last
// checkpoint when it has none, as the API's listing does.
func (b ManagerBackend) ListFiles(ctx context.Context, sessionID, dir string, depth int) ([]session.FileEntry, error) {
	entries, err := b.Manager.ListFiles(ctx, b.key(sessionID), dir, depth)
	if !session.IsNoSandbox(err) {
		return entries, err
	}
	saved, err := b.Manager.ListSavedFiles(ctx, b.key(sessionID), dir, depth)
	if err != nil {
		return nil, err
	}
	return saved.Entries, nil
}

// OpenFile opens a file of the session's sandbox, or of its last checkpoint
// when it has none.
func (b ManagerBackend) OpenFile(ctx context.Context, sessionID, path string) (io.ReadCloser, int64, error) {
	body, entry, err := b.Manager.ReadFile(ctx, b.key(sessionID), path)
	if session.IsNoSandbox(err) {
		var saved *session.SavedFile
		if body, saved, err = b.Manager.ReadSavedFile(ctx, b.key(sessionID), path); err == nil {
			entry = saved.Entry
		}
	}
	if err != nil {
		return nil, 0, err
	}
	return body, entry.Size, nil
}

// WriteFile writes a file of the session's sandbox.
func (b ManagerBackend) WriteFile(ctx context.Context, sessionID, path string, data []byte) (session.FileEntry, error) {
	return b.Manager.WriteFile(ctx, b.key(sessionID), path, bytesReader(data))
}

// DeleteFile removes a file or directory of the session's sandbox.
func (b ManagerBackend) DeleteFile(ctx context.Context, sessionID, path string) error {
	return b.Manager.DeleteFile(ctx, b.key(sessionID), path)
}

// UploadURLs fetches URLs into the session's sandbox.
func (b ManagerBackend) UploadURLs(ctx context.Context, sessionID string, urls []string, destDir string) (*session.URLUploadResult, error) {
	return b.Manager.UploadURLs(ctx, b.key(sessionID), session.URLUploadRequest{URLs: urls, DestDir: destDir})
}

// RunCommand runs a shell command in the session's sandbox.
func (b ManagerBackend) RunCommand(ctx context.Context, sessionID string, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error) {
	return b.Manager.RunCommand(ctx, b.key(sessionID), req, onEvent)
}

// StartCommand starts a background shell command in the session's sandbox.
func (b ManagerBackend) StartCommand(ctx context.Context, sessionID string, req session.CommandRequest) (*session.CommandStarted, error) {
	req.Background = true
	return b.Manager.StartCommand(ctx, b.key(sessionID), req)
}

// ReadCommand reads a background command's new output.
func (b ManagerBackend) ReadCommand(ctx context.Context, sessionID, commandID string, wait time.Duration) (*session.CommandOutput, error) {
	return b.Manager.ReadCommand(ctx, b.key(sessionID), commandID, wait)
}

// KillCommand kills a background command.
func (b ManagerBackend) KillCommand(ctx context.Context, sessionID, commandID string) error {
	return b.Manager.KillCommand(ctx, b.key(sessionID), commandID)
}
