package session

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Store keeps sessions, runs and API keys. Every write of a session or run is
// conditional on its Version: a write whose expected version does not match
// fails with ErrConflict and changes nothing. Implementations: pkg/store
// (DynamoDB).
type Store interface {
	// GetSession returns ErrNotFound when no record exists.
	GetSession(ctx context.Context, key Key) (*Session, error)
	// CreateSession writes a new record with Version 1; ErrConflict if one
	// exists.
	CreateSession(ctx context.Context, s *Session) error
	// UpdateSession replaces the record if its stored version is
	// s.Version, then sets s.Version to s.Version+1; ErrConflict otherwise.
	UpdateSession(ctx context.Context, s *Session) error
	// ListSessions pages through one principal's sessions in session id
	// order. An empty next cursor means the last page.
	ListSessions(ctx context.Context, tenant, principal string, limit int, cursor string) (sessions []*Session, next string, err error)
	// DueSessions returns up to limit live sessions whose DueAt is at or
	// before t, from the deadline index (never a scan), earliest first.
	// Records it cannot decode are skipped: it then returns the sessions it
	// could read together with a *SkippedRecordsError naming the others.
	DueSessions(ctx context.Context, t time.Time, limit int) ([]*Session, error)

	// CreateRun writes a new run with Version 1; ErrConflict if the id is
	// taken, which makes run ids idempotency keys.
	CreateRun(ctx context.Context, r *Run) error
	// GetRun returns ErrNotFound when no run has the id.
	GetRun(ctx context.Context, id string) (*Run, error)
	// UpdateRun replaces the run if its stored version is r.Version, then
	// increments r.Version; ErrConflict otherwise.
	UpdateRun(ctx context.Context, r *Run) error

	// PutAPIKey stores a key; ErrConflict if the hash exists.
	PutAPIKey(ctx context.Context, k *APIKey) error
	// GetAPIKey returns ErrNotFound for an unknown hash.
	GetAPIKey(ctx context.Context, hash string) (*APIKey, error)
	// ListAPIKeys returns every stored key (revoked ones included).
	ListAPIKeys(ctx context.Context) ([]*APIKey, error)
	// RevokeAPIKey marks a key revoked at t; ErrNotFound for an unknown hash.
	RevokeAPIKey(ctx context.Context, hash string, t time.Time) error

	// TakeSlot takes slot among the tenant's in one conditional write and
	// returns the counts after it: a *SlotsFullError when the tenant holds
	// limits.Tenant slots, or the slot's principal holds limits.Principal
	// while another principal holds any. Taking a slot already held
	// succeeds and changes nothing.
	TakeSlot(ctx context.Context, tenant string, slot Slot, limits SlotLimits) (SlotCounts, error)
	// ReleaseSlot gives a slot back; one not held is not an error.
	ReleaseSlot(ctx context.Context, tenant string, slot Slot) error
	// TenantSlots returns the slots the tenant holds, read consistently.
	TenantSlots(ctx context.Context, tenant string) ([]Slot, error)
}

// SkippedRecordsError reports stored records a read had to skip because
// they could not be decoded; the read's other results are valid. Records
// names each one (its keys and what was wrong) for an operator to repair.
type SkippedRecordsError struct {
	Op      string
	Records []string
}

func (e *SkippedRecordsError) Error() string {
	const show = 5
	names := e.Records[:min(len(e.Records), show)]
	more := ""
	if len(e.Records) > show {
		more = fmt.Sprintf(" (and %d more)", len(e.Records)-show)
	}
	return fmt.Sprintf("%s: skipped %d undecodable records: %s%s", e.Op, len(e.Records), strings.Join(names, "; "), more)
}

// SandboxSpec is what a new sandbox is created with.
type SandboxSpec struct {
	Template string
	Timeout  time.Duration // E2B's own timeout, refreshed on activity
	Metadata map[string]string
	Envs     map[string]string
	// AutoPause asks E2B to pause rather than kill at its timeout.
	AutoPause           bool
	AllowInternetAccess bool
}

// SandboxInfo is what the sandbox provider says about one sandbox.
type SandboxInfo struct {
	ID        string
	Template  string
	State     State // StateRunning or StatePaused
	Metadata  map[string]string
	StartedAt time.Time
	EndAt     time.Time
}

// FileEntry is one file or directory in a sandbox.
type FileEntry struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"` // "file", "dir" or "symlink"
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modifiedAt"`
}

// ShellOutcome is how one of the service's own shell commands ended.
type ShellOutcome struct {
	ExitCode int
	Stdout   string
	Stderr   string
}

// ProgramRunner is implemented by Sandboxes that can run a program with no
// shell: the service's own helpers in a sandbox (the workspace walk) run
// that way, so nothing the user put in ~/.profile or earlier on PATH runs
// in their place. A Sandboxes without it runs them with RunCommand.
type ProgramRunner interface {
	// RunProgram runs argv[0] with argv[1:], keeping at most maxOutput
	// bytes of stdout and of stderr.
	RunProgram(ctx context.Context, id string, argv []string, timeout time.Duration, maxOutput int) (ShellOutcome, error)
}

// Sandboxes is the sandbox provider: E2B, or the local runtime speaking
// E2B's protocols. Errors are ErrSandboxGone when the sandbox no longer
// exists, ErrNotFound for a missing file, ErrUnavailable when the provider
// cannot be reached or answers 5xx, ErrTimeout when a call ran out of time.
type Sandboxes interface {
	Create(ctx context.Context, spec SandboxSpec) (SandboxInfo, error)
	// Connect makes sure the sandbox runs (resuming a paused one) and sets
	// its timeout.
	Connect(ctx context.Context, id string, timeout time.Duration) (SandboxInfo, error)
	Get(ctx context.Context, id string) (SandboxInfo, error)
	// List returns the sandboxes whose metadata holds every given pair.
	List(ctx context.Context, metadata map[string]string) ([]SandboxInfo, error)
	// Kill removes the sandbox; killing one that is gone is not an error.
	Kill(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	SetTimeout(ctx context.Context, id string, timeout time.Duration) error

	// Execute runs code in the sandbox's kernel, calling onEvent for live
	// output when it is not nil. The code is never sent twice.
	Execute(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error)
	// ResetKernel restarts the default kernel context: variables go, files stay.
	ResetKernel(ctx context.Context, id string) error
	// CreateContext starts an interpreter context (ID, Language and Cwd
	// set); RestartContext clears a context's state and RemoveContext shuts
	// it down, both ErrNotFound for a context the sandbox does not have.
	CreateContext(ctx context.Context, id string, req ContextRequest) (CodeContext, error)
	RestartContext(ctx context.Context, id, contextID string) error
	RemoveContext(ctx context.Context, id, contextID string) error
	// Metrics returns the samples of the sandbox's resource use the
	// provider kept since a time, in any order.
	Metrics(ctx context.Context, id string, since time.Time) ([]SandboxMetric, error)
	// RunCommand runs a shell command, calling onEvent with live output.
	RunCommand(ctx context.Context, id string, cmd string, timeout time.Duration, onEvent func(Event)) (ShellOutcome, error)

	// RunShell runs a caller's command tagged c.Tag and waits for its end,
	// calling onEvent with Event{Started: true} once the process runs and
	// then with its output. Past c.Timeout the process is killed and the
	// result, with the output so far, says TimedOut.
	RunShell(ctx context.Context, id string, c ShellCommand, onEvent func(Event)) (ShellResult, error)
	// StartShell starts c in the background and returns its pid once it
	// runs; c.Timeout is its lifetime (0: none).
	StartShell(ctx context.Context, id string, c ShellCommand) (pid uint32, err error)
	// ListShells lists the sandbox's running processes.
	ListShells(ctx context.Context, id string) ([]ShellProcess, error)
	// ReadShell returns what the background command tagged tag printed
	// since the last read (its output is kept in the sandbox, under
	// CommandOutputDir/<tag>), waiting as r says, and whether it still
	// runs; ErrNotFound when no command was started with that tag.
	ReadShell(ctx context.Context, id, tag string, r ShellReadRequest) (ShellRead, error)
	// KillShell sends SIGKILL to the running process tagged tag;
	// ErrNotFound when none runs.
	KillShell(ctx context.Context, id, tag string) error

	ListFiles(ctx context.Context, id, dir string, depth int) ([]FileEntry, error)
	StatFile(ctx context.Context, id, path string) (FileEntry, error)
	// ReadFile streams a file; the caller closes the reader.
	ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error)
	// WriteFile streams r into path, creating parent directories.
	WriteFile(ctx context.Context, id, path string, r io.Reader) error
	RemoveFile(ctx context.Context, id, path string) error
}

// PresignedRequest is a request a client makes straight to blob storage.
type PresignedRequest struct {
	URL       string
	Method    string
	Headers   map[string]string // headers the client must send as signed
	ExpiresAt time.Time
}

// Blobs is blob storage for large transfers and results. Implementations:
// pkg/blob (S3).
type Blobs interface {
	// PresignPut lets a client upload exactly size bytes to key.
	PresignPut(ctx context.Context, key string, size int64, contentType string, ttl time.Duration) (PresignedRequest, error)
	// PresignGet lets a client download key.
	PresignGet(ctx context.Context, key string, ttl time.Duration) (PresignedRequest, error)
	// Open streams an object; ErrNotFound when it does not exist.
	Open(ctx context.Context, key string) (body io.ReadCloser, size int64, err error)
	// Put streams r to key in constant memory (multipart when large); size
	// may be -1 when unknown.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	Delete(ctx context.Context, key string) error
}

// RunRequested is the event that asks for an asynchronous run.
type RunRequested struct {
	Tenant         string `json:"tenant"`
	Principal      string `json:"principal"`
	SessionID      string `json:"sessionId"`
	Code           string `json:"code"`
	RunID          string `json:"runId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	TimeoutSecs    int    `json:"timeoutSecs,omitempty"`
}

// RunCompleted is the event published when a run has finished.
type RunCompleted struct {
	RunID      string      `json:"runId"`
	Tenant     string      `json:"tenant"`
	Principal  string      `json:"principal"`
	SessionID  string      `json:"sessionId"`
	Status     RunStatus   `json:"status"`
	DurationMs int64       `json:"durationMs"`
	Result     *ExecResult `json:"result,omitempty"`
	ResultKey  string      `json:"resultKey,omitempty"`
}

// Bus carries run events: EventBridge in production, in-process locally.
type Bus interface {
	PublishRunRequested(ctx context.Context, e RunRequested) error
	PublishRunCompleted(ctx context.Context, e RunCompleted) error
}

// Clock tells the time; tests use a fake one.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }
