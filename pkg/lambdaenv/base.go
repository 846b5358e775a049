package lambdaenv

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// Base is what every function builds at init: configuration, logger, AWS
// configuration and, when needed, the store. The authorizer needs nothing
// more; sessionenv builds the rest on top of it. Keeping the two apart keeps
// the E2B client, S3, EventBridge and the HTTP API out of the authorizer's
// bootstrap and its init.
type Base struct {
	Config Config
	Log    *slog.Logger
	AWS    aws.Config
	Store  *store.Store

	clock  session.Clock
	getenv func(string) string
}

// Option adjusts what is built; production uses none.
type Option func(*options)

type options struct {
	clock  session.Clock
	logOut io.Writer
	getenv func(string) string
}

// WithClock sets the clock of the store and the Manager (tests).
func WithClock(c session.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogOutput sends the logs to w instead of stdout.
func WithLogOutput(w io.Writer) Option { return func(o *options) { o.logOut = w } }

// NewBase builds the logger, the AWS configuration and, when needs has
// NeedStore, the store. It makes no network calls.
func NewBase(cfg Config, needs Needs, opts ...Option) (*Base, error) {
	o := options{clock: session.SystemClock{}, logOut: os.Stdout, getenv: os.Getenv}
	for _, f := range opts {
		f(&o)
	}
	awsCfg, err := awsConfig(o.getenv)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	b := &Base{Config: cfg, Log: NewLogger(o.logOut, cfg.LogLevel).With("tenant", cfg.Tenant), AWS: awsCfg,
		clock: o.clock, getenv: o.getenv}
	if needs.Has(NeedStore) {
		db := dynamodb.NewFromConfig(awsCfg, func(so *dynamodb.Options) { so.BaseEndpoint = b.Endpoint("DYNAMODB") })
		b.Store = store.New(db, cfg.Table, store.WithClock(o.clock))
	}
	return b, nil
}

// InitBase is configuration from the environment, then NewBase.
func InitBase(fn Function, opts ...Option) (*Base, error) {
	cfg, err := Load(os.Getenv, fn.Needs)
	if err != nil {
		return nil, fmt.Errorf("%s function: %w", fn.Name, err)
	}
	b, err := NewBase(cfg, fn.Needs, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s function: %w", fn.Name, err)
	}
	return b, nil
}

// MustAuthorizer is the authorizer function's init: a failure is logged as
// JSON and ends the process, which Lambda reports as an init error.
func MustAuthorizer() *AuthorizerHandler {
	b, err := InitBase(Authorizer)
	if err != nil {
		Exit(err)
	}
	a, err := b.Authorizer()
	if err != nil {
		Exit(err)
	}
	return b.AuthorizerHandler(a, os.Stdout)
}

// Exit logs why init failed and ends the process.
func Exit(err error) {
	NewLogger(os.Stdout, slog.LevelInfo).Error("init failed", "error", err)
	os.Exit(1)
}

// Authorizer is the REQUEST authorizer over the store's API keys.
func (b *Base) Authorizer() (*authorizer.Authorizer, error) {
	a, err := authorizer.New(b.Store, authorizer.Config{Tenant: b.Config.Tenant, JWT: b.Config.JWT, Logger: b.Log, BearerOnly: b.Config.BearerOnly})
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	return a, nil
}

// Endpoint is the endpoint override for one AWS service (DYNAMODB, S3,
// EVENTBRIDGE, SECRETS_MANAGER), nil for the default.
func (b *Base) Endpoint(service string) *string { return endpoint(b.getenv, service) }

// Clock is the clock the store uses; the Manager shares it.
func (b *Base) Clock() session.Clock { return b.clock }

// Now is the clock's time.
func (b *Base) Now() time.Time { return b.clock.Now() }
