package lambdaenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// Env is what one function built at init: its configuration, logger and the
// clients its Needs asked for. Fields it did not need stay nil.
type Env struct {
	Config    Config
	Log       *slog.Logger
	Store     *store.Store
	Blobs     *blob.Blobs
	Bus       *bus.EventBridge
	Sandboxes *sandboxes.E2B
	// Manager is set when the function needs sandboxes (every function
	// but the authorizer).
	Manager *session.Manager

	e2b   *e2b.Client
	clock session.Clock
}

// Option adjusts what New builds; production uses none.
type Option func(*options)

type options struct {
	clock  session.Clock
	logOut io.Writer
	getenv func(string) string
}

// WithClock sets the clock of the Manager and the store (tests).
func WithClock(c session.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogOutput sends the logs to w instead of stdout.
func WithLogOutput(w io.Writer) Option { return func(o *options) { o.logOut = w } }

// New builds what needs asks for from cfg. It makes network calls only to
// read the E2B key's secret; the other clients connect on first use.
func New(ctx context.Context, cfg Config, needs Needs, opts ...Option) (*Env, error) {
	o := options{clock: session.SystemClock{}, logOut: os.Stdout, getenv: os.Getenv}
	for _, f := range opts {
		f(&o)
	}
	e := &Env{Config: cfg, Log: NewLogger(o.logOut, cfg.LogLevel).With("tenant", cfg.Tenant), clock: o.clock}
	awsCfg, err := awsConfig(o.getenv)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if needs.Has(NeedStore) {
		db := dynamodb.NewFromConfig(awsCfg, func(so *dynamodb.Options) { so.BaseEndpoint = endpoint(o.getenv, "DYNAMODB") })
		e.Store = store.New(db, cfg.Table, store.WithClock(o.clock))
	}
	if needs.Has(NeedBlobs) {
		s3c := s3.NewFromConfig(awsCfg, func(so *s3.Options) {
			so.BaseEndpoint = endpoint(o.getenv, "S3")
			// A local S3 stand-in serves buckets by path, not host name.
			so.UsePathStyle = so.BaseEndpoint != nil
		})
		e.Blobs = blob.New(s3c, cfg.Bucket)
	}
	if needs.Has(NeedBus) {
		eb := eventbridge.NewFromConfig(awsCfg, func(so *eventbridge.Options) { so.BaseEndpoint = endpoint(o.getenv, "EVENTBRIDGE") })
		e.Bus = bus.NewEventBridge(eb, cfg.EventBus)
	}
	if needs.Has(NeedSandboxes) {
		if err := e.buildSandboxes(ctx, awsCfg, o.getenv, o.clock); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Init is what every main does: configuration from the environment, then
// New.
func Init(ctx context.Context, fn Function, opts ...Option) (*Env, error) {
	cfg, err := Load(os.Getenv, fn.Needs)
	if err != nil {
		return nil, fmt.Errorf("%s function: %w", fn.Name, err)
	}
	env, err := New(ctx, cfg, fn.Needs, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s function: %w", fn.Name, err)
	}
	return env, nil
}

// MustInit is Init for mains: a failure is logged as JSON and ends the
// process, which Lambda reports as an init error.
func MustInit(fn Function) *Env {
	env, err := Init(context.Background(), fn)
	if err != nil {
		NewLogger(os.Stdout, slog.LevelInfo).Error("init failed", "function", fn.Name, "error", err)
		os.Exit(1)
	}
	return env
}

// Fail ends an init that failed after MustInit, logging why.
func Fail(e *Env, err error) {
	e.Log.Error("init failed", "error", err)
	os.Exit(1)
}

func (e *Env) buildSandboxes(ctx context.Context, awsCfg aws.Config, getenv func(string) string, clock session.Clock) error {
	if e.Store == nil {
		return errors.New("sandboxes need the store")
	}
	key := e.Config.E2BAPIKey
	if key == "" {
		sm := secretsmanager.NewFromConfig(awsCfg, func(so *secretsmanager.Options) {
			so.BaseEndpoint = endpoint(getenv, "SECRETS_MANAGER")
		})
		k, err := e2bKey(ctx, sm, e.Config.E2BSecretARN)
		if err != nil {
			return err
		}
		key = k
	}
	client, err := e2b.New(e2b.Config{APIKey: key, APIURL: e.Config.E2BAPIURL, SandboxURL: e.Config.E2BSandboxURL,
		Domain: e.Config.E2BDomain, IgnoreEnv: true})
	if err != nil {
		return fmt.Errorf("E2B client: %w", err)
	}
	e.e2b, e.Sandboxes = client, sandboxes.New(client)
	deps := session.Deps{Store: e.Store, Sandboxes: e.Sandboxes, Clock: clock, Logger: e.Log}
	// Interfaces get only clients that exist: a nil *blob.Blobs would be a
	// non-nil session.Blobs.
	if e.Blobs != nil {
		deps.Blobs = e.Blobs
	}
	if e.Bus != nil {
		deps.Bus = e.Bus
	}
	mgr, err := session.NewManager(e.Config.Session, deps)
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("session manager: %w", err)
	}
	e.Manager = mgr
	return nil
}

func (e *Env) now() time.Time { return e.clock.Now() }

// Close releases the E2B client's idle connections.
func (e *Env) Close() error {
	if e.e2b != nil {
		return e.e2b.Close()
	}
	return nil
}
