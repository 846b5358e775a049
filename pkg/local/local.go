// Package local runs the whole of sessionbox on one machine, with no AWS
// account and no E2B key: the production adapters and the real Manager and
// API, pointed at in-process stand-ins (the DynamoDB and S3 emulators of
// pkg/localaws, the local E2B runtime of pkg/e2blocal reached through the
// E2B client, the in-process bus) and the reaper on a ticker. It is what
// `sessionbox serve` and `make run` start, and what end-to-end tests drive.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/diskspace"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/httplimits"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
	"github.com/sessionbox/sessionbox/pkg/playground"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
	"github.com/sessionbox/sessionbox/pkg/urlfetch"
)

// Names of the local table and bucket.
const (
	Table  = "sessionbox"
	Bucket = "sessionbox-transfers"
)

// DefaultSandboxDiskMB is the size of a sandbox's home image in serve: each
// home is admitted as a promise of its whole size against the free-space
// floor, so 2 GiB lets a 50 GiB disk hold ~24 sandboxes, where E2B's
// 10 GiB would hold 4.
const DefaultSandboxDiskMB = 2048

// reapTimeout bounds one reaper tick.
const reapTimeout = time.Minute

// keyCacheTTL is how long an authenticated key is remembered; a key revoked
// while the service runs stops working within it.
const keyCacheTTL = 30 * time.Second

// Config says how to run locally. The zero value works: an API on a free
// loopback port, state under a temporary directory the caller provides.
type Config struct {
	// Addr is the API's listen address, e.g. "127.0.0.1:8080".
	Addr string
	// DataDir holds the table, the S3 objects and the sandboxes' homes.
	DataDir string
	// Tenant is the tenant every local key belongs to; default "local".
	Tenant string
	// Keys are API keys to accept, each its own principal.
	Keys []Key
	// AllowedOrigins are the browser origins CORS admits; none (or "*")
	// admits any origin, without credentials (pkg/api's cors.go).
	AllowedOrigins []string
	// Session tunes the Manager; StackID defaults to "local". Unlike in
	// production, sandboxes are offline unless Session.AllowInternetAccess
	// is set, which the local runtime offers only as root with slirp4netns.
	Session session.Config
	// Runtime tunes the local E2B runtime; its addresses default to free
	// loopback ports and its data dir to DataDir/runtime.
	Runtime e2blocal.Config
	// E2B, when its APIKey is set, uses that E2B (cloud or another runtime)
	// instead of starting the local runtime.
	E2B e2b.Config
	// DynamoDB and S3, when set, are used instead of starting the in-process
	// stand-ins: another emulator (dynalite, versitygw) or a real account.
	// The table and the bucket are created there if missing.
	DynamoDB *dynamodb.Client
	S3       *s3.Client
	// HTTPLimits bound the API's clients (header and body read times,
	// header size, open connections); the zero value is httplimits'
	// defaults. Runtime.HTTPLimits does the same for the local runtime.
	HTTPLimits httplimits.Limits
	// MinFreeBytes is the free space kept on the data dir's file system:
	// below it, requests that may start a sandbox or store an upload get
	// 507 (API) or S3's InsufficientStorage (the S3 stand-in). 0 is
	// diskspace's default (1 GiB, or 5% of a smaller file system);
	// negative turns it off.
	MinFreeBytes int64
	// Statfs measures the data dir's file system; tests inject their own.
	Statfs diskspace.Statfs
	// ExpireInterval is how often objects past the bucket's lifecycle
	// ages are deleted; default 10 min.
	ExpireInterval time.Duration
	// ReapInterval is how often the reaper runs; default 30 s.
	ReapInterval time.Duration
	// RunWorkers bounds concurrent asynchronous runs; default 4.
	RunWorkers int
	Logger     *slog.Logger

	// Fetcher fetches uploads from URLs; default a urlfetch.Fetcher that
	// reaches private addresses only when Session.URLUploads.AllowPrivate
	// says so. Tests pass one with their own resolver.
	Fetcher session.URLFetcher
}

// Key is an API key and the principal it stands for.
type Key struct {
	Principal string
	Secret    string
}

// Service is sessionbox running locally.
type Service struct {
	// URL is the API's base URL.
	URL string
	// Manager is the service's domain, for tests that look behind the API.
	Manager *session.Manager
	// Runtime is the local E2B runtime, nil when an external E2B is used.
	Runtime *e2blocal.Runtime

	srv     *http.Server
	closers []func() error
	done    chan struct{}
	reaping sync.WaitGroup
}

// Start brings the service up; Close takes it down.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	s := &Service{done: make(chan struct{})}
	if err := s.start(ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func (s *Service) start(ctx context.Context, cfg Config) error {
	sbx, err := s.startSandboxes(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Session.AllowInternetAccess && s.Runtime != nil {
		// Every start would be refused; say so once, now.
		if err := s.Runtime.InternetAccess(); err != nil {
			return fmt.Errorf("sandboxes cannot have internet access here: %w", err)
		}
	}
	st, err := s.startStore(ctx, cfg)
	if err != nil {
		return err
	}
	blobs, blobClient, err := s.startBlobs(ctx, cfg)
	if err != nil {
		return err
	}
	// Accepted runs are journaled in the data dir: a kill -9 loses none.
	b, err := bus.NewDurableLocal(cfg.RunWorkers, filepath.Join(cfg.DataDir, "runs.journal"), cfg.Logger)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, b.Close)
	fetcher := cfg.Fetcher
	if fetcher == nil {
		f := urlfetch.New(urlfetch.Options{AllowPrivate: cfg.Session.URLUploads.AllowPrivate})
		s.closers = append(s.closers, func() error { f.Close(); return nil })
		fetcher = f
	}
	mgr, err := session.NewManager(cfg.Session, session.Deps{Store: st, Sandboxes: sbx, Blobs: blobs, Bus: b, Logger: cfg.Logger, Fetcher: fetcher})
	if err != nil {
		return fmt.Errorf("build manager: %w", err)
	}
	s.Manager = mgr
	b.SetHandler(func(ctx context.Context, ev session.RunRequested) error {
		_, err := mgr.ProcessRun(ctx, ev)
		return err
	})
	b.Resume(mgr.FailInterruptedRun)
	if err := seedKeys(ctx, st, cfg.Tenant, cfg.Keys); err != nil {
		return err
	}
	// Keys are remembered for a while, as API Gateway's authorizer cache
	// does in production: a known key costs no store read per request.
	// The playground page answers "/"; every other path is the API's.
	opts := []api.Option{api.WithLogger(cfg.Logger), api.WithKeyCache(keyCacheTTL), api.WithStorageCheck(cfg.floor().Check),
		api.WithAllowedOrigins(cfg.AllowedOrigins...),
		api.WithMCP(mcpserver.NewAPITransport(mgr, mcpserver.Options{Logger: cfg.Logger}))}
	// serve is one process: its memory holds every principal's count. It
	// counts only when a rate is set: serve has no stage for one key to
	// exhaust, and its users and test suites may burst far beyond it.
	if cfg.Session.RequestRate != (session.RequestRate{}) {
		opts = append(opts, api.WithRateLimiter(session.NewMemoryRateLimiter(cfg.Session.RequestRate)))
	}
	h := api.New(mgr, opts...)
	page := playground.Options{ConnectSources: []string{playground.UploadOrigin(aws.ToString(blobClient.Options().BaseEndpoint))}}
	if err := s.serve(ctx, cfg, playground.With(h, page)); err != nil {
		return err
	}
	s.startReaper(cfg)
	return nil
}

// floor is the free-space floor on the data dir's file system.
func (c Config) floor() diskspace.Floor {
	return diskspace.Floor{Dir: c.DataDir, MinFree: c.MinFreeBytes, Statfs: c.Statfs}
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Tenant == "" {
		c.Tenant = "local"
	}
	if c.Session.StackID == "" {
		c.Session.StackID = "local"
	}
	// Every local key is seeded under Tenant; the Manager checks keys against it.
	c.Session.Tenant = c.Tenant
	if c.ExpireInterval == 0 {
		c.ExpireInterval = 10 * time.Minute
	}
	if c.ReapInterval == 0 {
		c.ReapInterval = 30 * time.Second
	}
	if c.RunWorkers == 0 {
		c.RunWorkers = 4
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Runtime.Logger == nil {
		c.Runtime.Logger = c.Logger
	}
	if c.Runtime.APIAddr == "" {
		c.Runtime.APIAddr = "127.0.0.1:0"
	}
	if c.Runtime.SandboxAddr == "" {
		c.Runtime.SandboxAddr = "127.0.0.1:0"
	}
	if c.Runtime.DataDir == "" {
		c.Runtime.DataDir = filepath.Join(c.DataDir, "runtime")
	}
	if c.Runtime.DiskMB == 0 {
		c.Runtime.DiskMB = DefaultSandboxDiskMB
	}
	if c.E2B.APIKey == "" && c.Runtime.RecoverHomes == "" {
		// A session's sandbox killed with serve (SIGKILL) comes back with
		// its home, acknowledged writes since the last checkpoint included.
		c.Runtime.RecoverHomes = session.MetaRecoverHome
		c.Session.RecoverHomes = true
	}
	if c.Runtime.HomeFloor == nil {
		// Homes are admitted against the same floor, measured where the
		// runtime keeps them (the data dir, or the temp dir it moves them
		// to when the data dir is private).
		c.Runtime.HomeFloor = &diskspace.Floor{MinFree: c.MinFreeBytes, Statfs: c.Statfs}
	}
	return c
}

func (s *Service) startSandboxes(ctx context.Context, cfg Config) (session.Sandboxes, error) {
	e2bCfg := cfg.E2B
	if e2bCfg.APIKey == "" {
		// The runtime's control API lists every sandbox with its access
		// token: only this service may call it, with a key made now.
		rtCfg := cfg.Runtime
		if rtCfg.APIKey == "" {
			key, err := e2blocal.NewAPIKey()
			if err != nil {
				return nil, err
			}
			rtCfg.APIKey = key
		}
		rt, err := e2blocal.Start(ctx, rtCfg)
		if err != nil {
			return nil, fmt.Errorf("start local E2B runtime: %w", err)
		}
		s.Runtime = rt
		s.closers = append(s.closers, rt.Close)
		// The E2B client reaches the runtime in this process, with no
		// loopback TCP: control-plane calls go to its API's handler, and
		// sandbox traffic (every envd and interpreter call) passes the
		// routing proxy's checks and goes straight to the sandbox.
		other := http.DefaultTransport.(*http.Transport).Clone()
		s.closers = append(s.closers, func() error { other.CloseIdleConnections(); return nil })
		e2bCfg = e2b.Config{APIKey: rtCfg.APIKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL(),
			HTTPClient: &http.Client{Transport: rt.Transport(other)}}
	}
	client, err := e2b.New(e2bCfg)
	if err != nil {
		return nil, fmt.Errorf("build E2B client: %w", err)
	}
	s.closers = append(s.closers, client.Close)
	// Private: only the service, which holds each sandbox's traffic token,
	// reaches a sandbox's ports and its interpreter's /contexts.
	return sandboxes.NewWith(client, sandboxes.Options{Private: true}), nil
}

// startStore keeps the table under the data dir, so sessions, runs and keys
// survive a restart (their sandboxes do not: the next call starts a fresh
// one and says so).
func (s *Service) startStore(ctx context.Context, cfg Config) (*store.Store, error) {
	client := cfg.DynamoDB
	if client == nil {
		// In process, with no port: whoever reaches the table can mint keys.
		db, err := localaws.NewDynamoDB(context.WithoutCancel(ctx),
			localaws.WithDataDir(filepath.Join(cfg.DataDir, "dynamodb")), localaws.WithLogger(cfg.Logger))
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, func() error { db.Close(); return nil })
		client = db.Client()
	}
	if err := store.CreateTable(ctx, client, Table); err != nil {
		return nil, fmt.Errorf("create local table: %w", err)
	}
	return store.New(client, Table), nil
}

func (s *Service) startBlobs(ctx context.Context, cfg Config) (*blob.Blobs, *s3.Client, error) {
	client := cfg.S3
	if client == nil {
		endpoint, stop, err := localaws.StartS3(context.WithoutCancel(ctx), filepath.Join(cfg.DataDir, "s3"),
			localaws.WithSpaceCheck(cfg.floor().Check))
		if err != nil {
			return nil, nil, err
		}
		s.closers = append(s.closers, func() error { stop(); return nil })
		client = localaws.S3Client(endpoint)
	}
	if err := localaws.EnsureBucket(ctx, client, Bucket); err != nil {
		return nil, nil, fmt.Errorf("create local bucket: %w", err)
	}
	s.startExpiry(cfg, client)
	return blob.New(client, Bucket), client, nil
}

// expiryRules are the production bucket's lifecycle rules (infra/data.go):
// transfers, downloads and artifacts go after a day, large run results
// after seven, workspaces their retention plus the margin of reused
// objects, so local disk use is bounded the same way.
func expiryRules(cfg Config) []localaws.ExpiryRule {
	workspaces := cfg.Session.WorkspaceRetention
	if workspaces == 0 {
		workspaces = 30 * 24 * time.Hour // session.Config's default
	}
	return []localaws.ExpiryRule{
		{Prefix: "transfers/", Age: 24 * time.Hour},
		{Prefix: "downloads/", Age: 24 * time.Hour},
		{Prefix: "artifacts/", Age: 24 * time.Hour},
		{Prefix: "runs/", Age: 7 * 24 * time.Hour},
		{Prefix: "workspaces/", Age: workspaces + session.WorkspaceExpiryMargin},
	}
}

// startExpiry applies expiryRules now and every ExpireInterval.
func (s *Service) startExpiry(cfg Config, client *s3.Client) {
	rules := expiryRules(cfg)
	s.reaping.Add(1)
	go func() {
		defer s.reaping.Done()
		t := time.NewTicker(cfg.ExpireInterval)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
			n, err := localaws.Expire(ctx, client, Bucket, rules, time.Now())
			cancel()
			if err != nil {
				cfg.Logger.Warn("expire old objects", "deleted", n, "error", err)
			} else if n > 0 {
				cfg.Logger.Info("expire old objects", "deleted", n)
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
}

func (s *Service) serve(ctx context.Context, cfg Config, h http.Handler) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	// No write timeout: execute and install stream for as long as the code
	// runs, bounded by the Manager's execution limits. Reads are bounded:
	// a client stalled in its headers or body is dropped.
	s.srv = cfg.HTTPLimits.Server(h)
	go func() { _ = s.srv.Serve(cfg.HTTPLimits.Listener(ln)) }()
	return nil
}

func (s *Service) startReaper(cfg Config) {
	s.reaping.Add(1)
	go func() {
		defer s.reaping.Done()
		t := time.NewTicker(cfg.ReapInterval)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				// A tick may take longer than the interval (killing many
				// sandboxes); ticks never overlap here, and the next one
				// picks up whatever this one did not finish.
				ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
				rep, err := s.Manager.Reap(ctx)
				cancel()
				if err != nil || rep.Errors > 0 {
					cfg.Logger.Warn("reaper", "paused", rep.Paused, "killed", rep.Killed, "orphans", rep.Orphans, "errors", rep.Errors, "error", err)
				} else if rep.Paused+rep.Killed+rep.Orphans > 0 {
					cfg.Logger.Info("reaper", "paused", rep.Paused, "killed", rep.Killed, "orphans", rep.Orphans)
				}
			}
		}
	}()
}

// Close stops the API, the reaper and the stand-ins; the local runtime
// kills its sandboxes.
func (s *Service) Close() error {
	select {
	case <-s.done:
		return nil
	default:
		close(s.done)
	}
	var errs []error
	if s.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.srv.Shutdown(ctx))
		cancel()
	}
	// A tick in progress finishes before what it uses goes away.
	s.reaping.Wait()
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}
