// Package session is sessionbox's domain: sessions and their sandboxes, runs,
// API keys, the state machine that moves a session between them, and the
// interfaces (Store, Sandboxes, Blobs, Bus, Clock) through which it reaches
// the outside world. It imports no AWS package and knows nothing of HTTP or
// E2B's wire format; adapters live in packages named after their dependency.
package session

import (
	"time"
)

// State is where a session's sandbox is in its life.
type State string

// The states of a session (docs/architecture.md, "Sessions").
const (
	StateStarting State = "starting" // a caller holds the lease and is creating the sandbox
	StateRunning  State = "running"  // the sandbox is alive
	StatePaused   State = "paused"   // the sandbox is paused; memory kept, resumed on use
	// StatePausing: the reaper holds the lease and is pausing the sandbox;
	// user calls wait for it. Readers see it as paused.
	StatePausing  State = "pausing"
	StateStopping State = "stopping" // being killed
	StateStopped  State = "stopped"  // no sandbox; the record stays
	StateError    State = "error"    // the last transition failed; the next call starts afresh
)

// Live reports whether a session in this state may own a sandbox, and so
// must be watched by the reaper.
func (s State) Live() bool {
	switch s {
	case StateStarting, StateRunning, StatePausing, StatePaused, StateStopping:
		return true
	}
	return false
}

// Key names a session. Tenant and principal come from the authorizer, so two
// callers can use the same session id without meeting.
type Key struct {
	Tenant    string
	Principal string
	SessionID string
}

// SandboxType is what a session's sandbox runs.
type SandboxType string

const (
	TypeCodeInterpreter SandboxType = "code_interpreter"
	TypeCustom          SandboxType = "custom"
)

// Session is one (tenant, principal, session) and the sandbox it owns.
type Session struct {
	Key

	State     State
	SandboxID string
	Type      SandboxType
	Template  string
	Metadata  map[string]string

	// IdleTimeout overrides the configured idle timeout when non-zero.
	IdleTimeout time.Duration
	// PauseOnIdle pauses instead of killing when the idle deadline passes.
	PauseOnIdle bool
	// NoPersist turns the session's workspace off (persist: false at start).
	NoPersist bool

	// SandboxStartedAt is when the current sandbox was recorded running.
	SandboxStartedAt time.Time
	// Contexts are the interpreter contexts created through the API, each
	// with the sandbox it lives in; those of earlier sandboxes are kept a
	// while so using one says it is gone.
	Contexts []CodeContext

	// LastCheckpoint is the last checkpoint of the workspace; zero At when
	// none was taken.
	LastCheckpoint CheckpointInfo
	// CheckpointProblem says why the last checkpoint could not be taken
	// (the size cap); empty after a good one.
	CheckpointProblem string
	// CheckpointTriedAt is when a checkpoint was last attempted, so a
	// failing one is retried only after CheckpointInterval.
	CheckpointTriedAt time.Time
	// TimeoutRefreshProblem says that the last refresh of the sandbox's
	// timeout at the provider failed, so the sandbox may end before its
	// idle deadline; empty once a refresh worked.
	TimeoutRefreshProblem string
	// Deleted is set once the session was deleted: the record only awaits
	// the table's TTL.
	Deleted bool
	// Restored is set, on the session a start returns, when the new
	// sandbox got files back from the workspace. It is not stored.
	Restored *RestoreInfo

	CreatedAt        time.Time
	LastActivityAt   time.Time
	IdleDeadline     time.Time
	LifetimeDeadline time.Time

	// LeaseOwner and LeaseUntil guard a start in progress: whoever holds an
	// unexpired lease is creating the sandbox; an expired one may be taken.
	LeaseOwner string
	LeaseUntil time.Time
	// Slot is the slot of the tenant's cap the session holds (Slot.String),
	// from its start lease until its sandbox is gone; empty when none.
	Slot string

	// DueAt is when the reaper must next look at this session; zero when the
	// session is not live. Stores index live sessions on it.
	DueAt time.Time
	// ExpiresAt is when the record may be deleted (the table's TTL).
	// Deletion is late by hours, so readers check deadlines themselves.
	ExpiresAt time.Time

	// Version increases by one with every write; writes are conditional on it.
	Version int64
}

// RunStatus is where an asynchronous run is.
type RunStatus string

const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
)

// Done reports whether the run has finished, either way.
func (s RunStatus) Done() bool { return s == RunSucceeded || s == RunFailed }

// Run is one asynchronous execution, requested through the API or an event.
type Run struct {
	ID string
	Key
	Status         RunStatus
	Code           string
	TimeoutSecs    int
	IdempotencyKey string

	// Result is kept inline when small; ResultKey names the blob holding it
	// when it is too large for a record.
	Result    *ExecResult
	ResultKey string
	// Error says why a run failed without a result.
	Error string

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExpiresAt  time.Time
	Version    int64
}

// APIKey is a stored API key. Only the SHA-256 of the key is kept.
type APIKey struct {
	Hash      string // hex SHA-256 of the key
	Prefix    string // the key's first characters, to tell keys apart in listings
	Tenant    string
	Principal string
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is valid
}

// Revoked reports whether the key may no longer be used.
func (k APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }
