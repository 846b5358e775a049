package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// DefaultMaxInlineFileBytes is the inline file limit, the same when served
// locally and on Lambda: a Lambda request or response holds at most 6 MB
// (6,291,456 bytes) and API Gateway carries binary bodies base64-encoded
// (4 bytes for every 3) inside a JSON event with the headers, so 4.5 MB
// raw (6,000,000 encoded) leaves room for the envelope, and 4.6 MB would
// not reliably fit.
const DefaultMaxInlineFileBytes = 4_500_000

// Config holds the Manager's limits and timings. Zero fields take the
// defaults documented on each.
type Config struct {
	// RecoverHomes (local mode) asks the sandbox provider, at a session's
	// new sandbox, for the home of its previous one (MetaRecoverHome), and
	// skips the workspace restore when the provider gave it: files written
	// and acknowledged before the service was killed outlive it.
	RecoverHomes bool

	IdleTimeout time.Duration // default 30m: a session idle this long is paused or killed
	// Lifetime is how long one sandbox of a session lives (default and at
	// most MaxSandboxLifetime). At its end the reaper stops an idle session;
	// one in use whose workspace persists is recycled instead: checkpointed,
	// its sandbox killed, and its next call gets a fresh sandbox with the
	// workspace restored (restarted and restored in the answer), as when a
	// sandbox vanishes.
	Lifetime    time.Duration
	ExecTimeout time.Duration // default 5m: an execution's default (and an install's) time limit
	// MaxSandboxLifetime is the sandbox provider's cap on a sandbox's run,
	// the E2B plan's (default 1h, the Base plan's; 24h on Pro). E2B refuses
	// a longer timeout with 400 and ends a sandbox that long after its
	// start, so no timeout asked of it is longer, and a sandbox's Lifetime
	// ends ProviderTimeoutSlack (at most a tenth of it) before, for the
	// reaper to checkpoint and recycle it first.
	MaxSandboxLifetime time.Duration

	// MaxOutputBytes caps stdout and stderr each (default 200 KB); beyond it
	// output is cut and Truncated set.
	MaxOutputBytes int
	// MaxResultBytes caps an execution's rich results together, measured
	// JSON-encoded (default 1 MB), so a buffered response (Lambda's is 6 MB)
	// and a run record stay within bounds; beyond it the largest results
	// are cut to their text and Truncated set.
	MaxResultBytes int
	// MaxInlineFileBytes caps inline file reads and writes (default
	// DefaultMaxInlineFileBytes).
	MaxInlineFileBytes int64
	// MaxLiveSandboxesPerTenant caps a tenant's live sandboxes (default 20);
	// a start beyond it fails with ErrLimit.
	MaxLiveSandboxesPerTenant int
	// MaxLiveSandboxesPerPrincipal is a principal's share of the tenant's
	// cap while another principal of the tenant has live sandboxes (default
	// half the tenant's cap, rounded up); a principal alone may use the
	// whole cap. A start beyond it fails with ErrLimit.
	MaxLiveSandboxesPerPrincipal int
	// MaxSandboxesPerKey budgets the running sandboxes of the provider's
	// API key, shared by every tenant and deployment using it (default 20,
	// E2B's Base plan; 100 and up on Pro; negative: no budget): a start
	// past it fails with ErrLimit. Counted at the provider (keybudget.go).
	MaxSandboxesPerKey int
	// DefaultTemplate is the template of code interpreter sandboxes
	// (default "code-interpreter-v1").
	DefaultTemplate string
	// ActivityWriteInterval is the least time between two activity writes of
	// one session (default 30s), so an execute rarely writes.
	ActivityWriteInterval time.Duration
	// LeaseDuration is how long a start may hold a session before another
	// caller may take it over (default 1m).
	LeaseDuration time.Duration
	// TransferTTL is the lifetime of presigned URLs (default 15m).
	TransferTTL time.Duration
	// Tenant is the deployment's tenant (one per stack): Authenticate
	// accepts only its keys, and fails (a configuration error, not a 401)
	// while it is empty.
	Tenant string
	// StackID goes into every sandbox's metadata; the reaper's orphan sweep
	// kills only sandboxes carrying it. Empty disables the sweep.
	StackID string
	// AllowInternetAccess lets sandboxes reach the internet (pip from PyPI).
	// Off by default: the local runtime has no network to give.
	AllowInternetAccess bool
	// RequestRate is each principal's API request rate (RateLimiter);
	// zero values take RequestRate's defaults.
	RequestRate RequestRate

	// CallBackstopSlack is how long past an execution's or an install's own
	// time limit (which the provider enforces) the Manager waits for the
	// provider's answer before giving up with ErrTimeout (default 10s).
	CallBackstopSlack time.Duration

	// ProviderTimeoutSlack is how far past the idle deadline the provider's
	// own sandbox timeout is kept (default 2m), so a sandbox dies even when
	// the reaper is down, but never before the reaper had its turn.
	ProviderTimeoutSlack time.Duration
	// StoppedRetention is how long a stopped record is kept (default 7 days).
	StoppedRetention time.Duration
	// RunRetention is how long a run record is kept (default 7 days).
	RunRetention time.Duration
	// OrphanGrace is the least age of a sandbox the orphan sweep may kill
	// (default 10m); it must exceed LeaseDuration, since a start creates its
	// sandbox before recording it.
	OrphanGrace time.Duration
	// ReapBatch caps the due sessions handled per tick (default 100).
	ReapBatch int
	// ReapParallelism caps concurrent provider calls per tick (default 8).
	ReapParallelism int
	// MaxArtifacts caps the artifacts returned per execution (default 10).
	MaxArtifacts int
	// MaxArtifactBytes skips larger files as artifacts (default 100 MB).
	MaxArtifactBytes int64
	// DisableArtifacts turns artifact collection off, saving one file
	// listing per execution.
	DisableArtifacts bool
	// ArtifactClockSkew widens the window in which a file's modified time
	// counts as written by an execution (default 10ms: file times come from
	// the kernel's coarse clock, a tick behind). Raise it for providers whose
	// clocks drift from ours; files written that long before an execution
	// may then be reported again.
	ArtifactClockSkew time.Duration
	// MaxTransferBytes caps a presigned upload (default 5 GiB, S3's single
	// PUT limit).
	MaxTransferBytes int64
	// MaxInlineRunResultBytes is the largest run result kept in the run
	// record (default 300 KB, under DynamoDB's 400 KB item limit); larger
	// ones go to Blobs.
	MaxInlineRunResultBytes int
	// URLUploads are the limits of uploads from URLs.
	URLUploads URLUploadConfig

	// DisableWorkspaces turns durable workspaces off for the deployment;
	// otherwise every session keeps /home/user in blob storage unless
	// started with persist off.
	DisableWorkspaces bool
	// MaxWorkspaceBytes caps the bytes a checkpoint keeps (default 1 GiB);
	// a larger workspace is not checkpointed and its status says why.
	MaxWorkspaceBytes int64
	// MaxWorkspaceEntries caps the files, directories and links a
	// checkpoint keeps (default 100,000); it also bounds the memory a
	// checkpoint's listing takes (512 bytes of listing per entry).
	MaxWorkspaceEntries int
	// CheckpointInterval is the least time between the checkpoints the
	// reaper takes of a session in use (default 5m).
	CheckpointInterval time.Duration
	// WorkspaceRetention is how long a workspace is kept after its last
	// checkpoint (default 30 days); the session's record stays as long.
	// The bucket's lifecycle rule for workspaces/ must expire objects
	// after WorkspaceRetention plus WorkspaceExpiryMargin.
	WorkspaceRetention time.Duration
}

// Deps are the Manager's ports to the outside world. Store, Sandboxes and
// Clock are required (Clock defaults to the system clock); without Blobs,
// transfers fail and executions return no artifacts; without Bus, SubmitRun
// fails and runs publish no completion.
type Deps struct {
	Store     Store
	Sandboxes Sandboxes
	Blobs     Blobs
	Bus       Bus
	Clock     Clock
	Logger    *slog.Logger
	// Fetcher fetches uploads from URLs; without it they fail.
	Fetcher URLFetcher
}

// Manager is the domain service: it moves sessions through their states and
// does the work of every API route, the runs worker and the reaper.
type Manager struct {
	cfg       Config
	store     Store
	sandboxes Sandboxes
	blobs     Blobs
	bus       Bus
	clock     Clock
	log       *slog.Logger
	fetcher   URLFetcher
	caps      capView
}

// NewManager checks the configuration, fills defaults and returns a Manager.
func NewManager(cfg Config, deps Deps) (*Manager, error) {
	if deps.Store == nil || deps.Sandboxes == nil {
		return nil, errors.New("session: NewManager needs a Store and a Sandboxes")
	}
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, store: deps.Store, sandboxes: deps.Sandboxes,
		blobs: deps.Blobs, bus: deps.Bus, clock: deps.Clock, log: deps.Logger, fetcher: deps.Fetcher}
	if m.clock == nil {
		m.clock = SystemClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return m, nil
}

// Config returns the effective configuration, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.IdleTimeout, 30*time.Minute)
	def(&c.MaxSandboxLifetime, time.Hour)
	def(&c.Lifetime, c.MaxSandboxLifetime)
	def(&c.ExecTimeout, 5*time.Minute)
	def(&c.ActivityWriteInterval, 30*time.Second)
	def(&c.LeaseDuration, time.Minute)
	def(&c.TransferTTL, 15*time.Minute)
	def(&c.ProviderTimeoutSlack, 2*time.Minute)
	def(&c.CallBackstopSlack, 10*time.Second)
	def(&c.StoppedRetention, 7*24*time.Hour)
	def(&c.RunRetention, 7*24*time.Hour)
	def(&c.OrphanGrace, 10*time.Minute)
	def(&c.ArtifactClockSkew, 10*time.Millisecond)
	def(&c.CheckpointInterval, 5*time.Minute)
	def(&c.WorkspaceRetention, 30*24*time.Hour)
	if c.MaxWorkspaceBytes == 0 {
		c.MaxWorkspaceBytes = 1 << 30
	}
	if c.MaxWorkspaceEntries == 0 {
		c.MaxWorkspaceEntries = 100_000
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = 200 << 10
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = 1 << 20
	}
	if c.MaxInlineFileBytes == 0 {
		c.MaxInlineFileBytes = DefaultMaxInlineFileBytes
	}
	if c.MaxLiveSandboxesPerTenant == 0 {
		c.MaxLiveSandboxesPerTenant = 20
	}
	if c.MaxLiveSandboxesPerPrincipal == 0 {
		c.MaxLiveSandboxesPerPrincipal = (c.MaxLiveSandboxesPerTenant + 1) / 2
	}
	if c.MaxSandboxesPerKey == 0 {
		c.MaxSandboxesPerKey = 20
	}
	if c.DefaultTemplate == "" {
		c.DefaultTemplate = "code-interpreter-v1"
	}
	if c.ReapBatch == 0 {
		c.ReapBatch = 100
	}
	if c.ReapParallelism == 0 {
		c.ReapParallelism = 8
	}
	if c.MaxArtifacts == 0 {
		c.MaxArtifacts = 10
	}
	if c.MaxArtifactBytes == 0 {
		c.MaxArtifactBytes = 100 << 20
	}
	if c.MaxTransferBytes == 0 {
		c.MaxTransferBytes = 5 << 30
	}
	if c.MaxInlineRunResultBytes == 0 {
		c.MaxInlineRunResultBytes = 300 << 10
	}
	c.URLUploads = c.URLUploads.withDefaults()
	return c
}

func (c Config) check() error {
	switch {
	case c.IdleTimeout < 0, c.Lifetime < 0, c.MaxSandboxLifetime < 0, c.ExecTimeout < 0, c.ActivityWriteInterval < 0,
		c.LeaseDuration < 0, c.TransferTTL < 0, c.ProviderTimeoutSlack < 0, c.OrphanGrace < 0, c.CallBackstopSlack < 0,
		c.CheckpointInterval < 0, c.WorkspaceRetention < 0:
		return errors.New("session: durations in Config must not be negative")
	case c.MaxOutputBytes < 0, c.MaxResultBytes < 0, c.MaxInlineFileBytes < 0, c.MaxLiveSandboxesPerTenant < 0,
		c.MaxLiveSandboxesPerPrincipal < 0, c.ReapBatch < 0, c.ReapParallelism < 0, c.MaxArtifacts < 0, c.MaxArtifactBytes < 0,
		c.MaxTransferBytes < 0, c.MaxInlineRunResultBytes < 0, c.MaxWorkspaceBytes < 0, c.MaxWorkspaceEntries < 0:
		return errors.New("session: limits in Config must not be negative")
	case c.MaxLiveSandboxesPerTenant > MaxSlotsPerTenant:
		return fmt.Errorf("session: MaxLiveSandboxesPerTenant (%d) must not exceed %d", c.MaxLiveSandboxesPerTenant, MaxSlotsPerTenant)
	case c.OrphanGrace <= c.LeaseDuration:
		return fmt.Errorf("session: OrphanGrace (%s) must exceed LeaseDuration (%s)", c.OrphanGrace, c.LeaseDuration)
	case c.Lifetime > c.MaxSandboxLifetime:
		return fmt.Errorf("session: Lifetime (%s) must not exceed MaxSandboxLifetime (%s), the provider's cap: E2B refuses longer sandboxes (raise MaxSandboxLifetime on a plan that allows more)", c.Lifetime, c.MaxSandboxLifetime)
	case c.IdleTimeout > c.Lifetime:
		return fmt.Errorf("session: IdleTimeout (%s) must not exceed Lifetime (%s)", c.IdleTimeout, c.Lifetime)
	}
	return c.URLUploads.check()
}

// randomID returns n random bytes in hex: lease owners, run and blob ids.
func randomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (it panics itself
		// when the OS source breaks); keep the compiler honest.
		panic(fmt.Sprintf("session: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// detach gives cleanup work that must finish even when the caller's context
// was cancelled (recording a sandbox that now exists, killing one that must
// not) its own short deadline.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}
