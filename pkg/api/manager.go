package api

import (
	"context"
	"io"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Manager is what the API needs of *session.Manager. It is an interface so
// tests can inject faults; production passes *session.Manager.
type Manager interface {
	Authenticate(ctx context.Context, plaintext string) (*session.APIKey, error)

	Start(ctx context.Context, key session.Key, opts session.StartOptions) (*session.Session, error)
	Stop(ctx context.Context, key session.Key) (*session.Session, error)
	Status(ctx context.Context, key session.Key) (*session.Session, error)
	List(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*session.Session, string, error)
	Checkpoint(ctx context.Context, key session.Key) (session.CheckpointInfo, error)
	Metrics(ctx context.Context, key session.Key) (*session.SandboxMetrics, error)
	Delete(ctx context.Context, key session.Key) error

	Execute(ctx context.Context, key session.Key, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error)
	Reset(ctx context.Context, key session.Key) error
	ExecuteOnce(ctx context.Context, tenant, principal string, req session.OnceRequest, onEvent func(session.Event)) (*session.ExecResult, error)
	Install(ctx context.Context, key session.Key, req session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error)

	CreateContext(ctx context.Context, key session.Key, req session.ContextRequest) (*session.CodeContext, error)
	ListContexts(ctx context.Context, key session.Key) ([]session.CodeContext, error)
	DeleteContext(ctx context.Context, key session.Key, id string) error
	ResetContext(ctx context.Context, key session.Key, id string) error
	RunCommand(ctx context.Context, key session.Key, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error)
	StartCommand(ctx context.Context, key session.Key, req session.CommandRequest) (*session.CommandStarted, error)
	ListCommands(ctx context.Context, key session.Key) ([]session.CommandInfo, error)
	CommandStatus(ctx context.Context, key session.Key, commandID string) (*session.CommandInfo, error)
	AttachCommand(ctx context.Context, key session.Key, commandID string, onEvent func(session.Event)) (*session.CommandResult, error)
	ReadCommand(ctx context.Context, key session.Key, commandID string, wait time.Duration) (*session.CommandOutput, error)
	KillCommand(ctx context.Context, key session.Key, commandID string) error

	ListFiles(ctx context.Context, key session.Key, dir string, depth int) ([]session.FileEntry, error)
	ReadFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, session.FileEntry, error)
	ListSavedFiles(ctx context.Context, key session.Key, dir string, depth int) (*session.SavedListing, error)
	ReadSavedFile(ctx context.Context, key session.Key, path string) (io.ReadCloser, *session.SavedFile, error)
	WriteFile(ctx context.Context, key session.Key, path string, r io.Reader) (session.FileEntry, error)
	DeleteFile(ctx context.Context, key session.Key, path string) error
	UploadURL(ctx context.Context, key session.Key, path string, size int64, contentType string) (*session.UploadTicket, error)
	Import(ctx context.Context, key session.Key, transferID string) (session.FileEntry, error)
	DownloadURL(ctx context.Context, key session.Key, path string) (*session.DownloadTicket, error)
	UploadURLs(ctx context.Context, key session.Key, req session.URLUploadRequest) (*session.URLUploadResult, error)

	SubmitRun(ctx context.Context, key session.Key, req session.RunRequest) (*session.Run, error)
	GetRun(ctx context.Context, tenant, principal, runID string) (*session.Run, error)
	RunResultURL(ctx context.Context, tenant, principal, runID string) (*session.DownloadTicket, error)
}

// Production wiring must keep compiling against the real Manager.
var _ Manager = (*session.Manager)(nil)
