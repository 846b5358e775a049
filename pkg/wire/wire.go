// Package wire holds the JSON shapes of the HTTP API that both ends speak:
// pkg/api encodes the responses and decodes the requests in it, pkg/client
// does the reverse (its exported names are aliases of these). Each type is
// one schema of the OpenAPI document (pkg/api/openapi.json), named after
// it; a test holds their field names to the document's properties.
//
// Request bodies whose required fields the server must tell apart from
// empty ones (code, cmd) stay in pkg/api, which decodes them into pointers,
// and pkg/client, whose callers set plain values.
package wire

import (
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Session is a session as the API shows it.
type Session struct {
	SessionID string `json:"sessionId"`
	// State is "running", "paused" or "stopped": a session.State, kept a
	// plain string so the client's callers compare and print it freely.
	State            string            `json:"state"`
	Type             string            `json:"type,omitempty"`
	SandboxID        string            `json:"sandboxId,omitempty"`
	Template         string            `json:"template,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	PauseOnIdle      bool              `json:"pauseOnIdle"`
	IdleTimeoutSecs  int               `json:"idleTimeoutSecs,omitempty"`
	CreatedAt        *time.Time        `json:"createdAt,omitempty"`
	LastActivityAt   *time.Time        `json:"lastActivityAt,omitempty"`
	IdleDeadline     *time.Time        `json:"idleDeadline,omitempty"`
	LifetimeDeadline *time.Time        `json:"lifetimeDeadline,omitempty"`
	// Persist is false when the session keeps no workspace, else absent.
	Persist *bool `json:"persist,omitempty"`
	// LastCheckpoint is the workspace's last good checkpoint, if any.
	LastCheckpoint    *session.CheckpointInfo `json:"lastCheckpoint,omitempty"`
	CheckpointProblem string                  `json:"checkpointProblem,omitempty"`
	// TimeoutRefreshProblem says the sandbox's timeout could not be
	// refreshed at the provider: it may end before its idle deadline.
	TimeoutRefreshProblem string `json:"timeoutRefreshProblem,omitempty"`
	// Restored is set on a start that gave a fresh sandbox its files back.
	Restored *session.RestoreInfo `json:"restored,omitempty"`
}

// SessionList is one page of the caller's sessions.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// RunAccepted answers a submitted run.
type RunAccepted struct {
	RunID  string            `json:"runId"`
	Status session.RunStatus `json:"status"`
}

// Run is an asynchronous execution and, once done, its result.
type Run struct {
	RunID     string              `json:"runId"`
	SessionID string              `json:"sessionId"`
	Status    session.RunStatus   `json:"status"`
	Result    *session.ExecResult `json:"result,omitempty"`
	// ResultURL downloads a result too large to keep with the run, until
	// ResultExpiresAt.
	ResultURL       string     `json:"resultUrl,omitempty"`
	ResultExpiresAt *time.Time `json:"resultExpiresAt,omitempty"`
	// Error says why a failed run did not run to its end.
	Error      string     `json:"error,omitempty"`
	CreatedAt  *time.Time `json:"createdAt,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// ContextRequest asks for a new interpreter context; empty language means
// python, empty cwd /home/user.
type ContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

// CodeContext is an interpreter context of a session's sandbox.
type CodeContext struct {
	ContextID string    `json:"contextId"`
	Language  string    `json:"language"`
	Cwd       string    `json:"cwd"`
	CreatedAt time.Time `json:"createdAt"`
}

// ContextList is the contexts of a session's sandbox.
type ContextList struct {
	Contexts []CodeContext `json:"contexts"`
}

// InstallRequest asks pip to install packages; IndexURL, when set,
// replaces PyPI.
type InstallRequest struct {
	Packages []string `json:"packages"`
	IndexURL string   `json:"indexUrl,omitempty"`
}

// InstallResult is an install's outcome.
type InstallResult struct {
	Success    bool   `json:"success"`
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMs int64  `json:"durationMs"`
	Truncated  bool   `json:"truncated"`
	Restarted  bool   `json:"restarted"`
	// Restored is set when this call's fresh sandbox got files back.
	Restored *session.RestoreInfo `json:"restored,omitempty"`
}

// FileList is a directory listing: of the live files, or, with Source
// "workspace", of the last checkpoint (taken at CheckpointAt) of a session
// without a sandbox.
type FileList struct {
	Entries      []session.FileEntry `json:"entries"`
	Source       string              `json:"source,omitempty"`
	CheckpointAt *time.Time          `json:"checkpointAt,omitempty"`
}

// UploadURLRequest asks for a presigned URL that takes SizeBytes for Path.
// SizeBytes is a pointer because the server requires it, 0 included.
type UploadURLRequest struct {
	Path        string `json:"path"`
	SizeBytes   *int64 `json:"sizeBytes"`
	ContentType string `json:"contentType,omitempty"`
}

// UploadTicket is a presigned URL that takes one file's bytes.
type UploadTicket struct {
	UploadURL string `json:"uploadUrl"`
	Method    string `json:"method"`
	// Headers must be sent with the upload as given.
	Headers    map[string]string `json:"headers"`
	ExpiresAt  *time.Time        `json:"expiresAt"`
	TransferID string            `json:"transferId"`
}

// ImportRequest moves an upload made to an UploadTicket into the sandbox.
type ImportRequest struct {
	TransferID string `json:"transferId"`
}

// DownloadURLRequest asks for a presigned URL serving one file.
type DownloadURLRequest struct {
	Path string `json:"path"`
}

// DownloadTicket is a presigned URL that serves one file of a sandbox.
type DownloadTicket struct {
	DownloadURL string     `json:"downloadUrl"`
	ExpiresAt   *time.Time `json:"expiresAt"`
	SizeBytes   int64      `json:"sizeBytes"`
}

// UploadURLsRequest has the service fetch each URL into DestDir of the
// sandbox ("" for the working directory).
type UploadURLsRequest struct {
	URLs    []string `json:"urls"`
	DestDir string   `json:"destDir,omitempty"`
}
