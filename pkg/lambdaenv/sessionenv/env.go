// Package sessionenv builds the functions that work on sessions (the API
// functions, runs and the reaper) on top of lambdaenv's base: the E2B
// client and sandboxes adapter, S3 blobs, the EventBridge bus, the
// session.Manager, and the handlers over them.
package sessionenv

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/urlfetch"
)

// Env is what a session function built at init. Clients its Needs did not
// ask for stay nil.
type Env struct {
	*lambdaenv.Base
	Blobs     *blob.Blobs
	Bus       *bus.EventBridge
	Sandboxes *sandboxes.E2B
	Manager   *session.Manager

	e2b       *e2b.Client
	transport *http.Transport // under the key rotator, when the key is a secret's
}

// e2bTransport is pooled for many concurrent long-lived streams to the E2B
// API and sandbox hosts.
func e2bTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 64
	return t
}

// New builds what needs asks for from cfg; needs must include NeedStore and
// NeedSandboxes. The only network call is the read of the E2B key's secret;
// the other clients connect on first use.
func New(ctx context.Context, cfg lambdaenv.Config, needs lambdaenv.Needs, opts ...lambdaenv.Option) (*Env, error) {
	if !needs.Has(lambdaenv.NeedStore | lambdaenv.NeedSandboxes) {
		return nil, fmt.Errorf("session functions need the store and sandboxes")
	}
	base, err := lambdaenv.NewBase(cfg, needs, opts...)
	if err != nil {
		return nil, err
	}
	e := &Env{Base: base}
	if needs.Has(lambdaenv.NeedBlobs) {
		s3c := s3.NewFromConfig(base.AWS, func(so *s3.Options) {
			so.BaseEndpoint = base.Endpoint("S3")
			// A local S3 stand-in serves buckets by path, not host name.
			so.UsePathStyle = so.BaseEndpoint != nil
		})
		e.Blobs = blob.New(s3c, cfg.Bucket)
	}
	if needs.Has(lambdaenv.NeedBus) {
		eb := eventbridge.NewFromConfig(base.AWS, func(so *eventbridge.Options) { so.BaseEndpoint = base.Endpoint("EVENTBRIDGE") })
		e.Bus = bus.NewEventBridge(eb, cfg.EventBus)
	}
	if err := e.buildManager(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Init is what the mains do: configuration from the environment, then New.
func Init(ctx context.Context, fn lambdaenv.Function, opts ...lambdaenv.Option) (*Env, error) {
	cfg, err := lambdaenv.Load(os.Getenv, fn.Needs)
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
func MustInit(fn lambdaenv.Function) *Env {
	env, err := Init(context.Background(), fn)
	if err != nil {
		lambdaenv.Exit(err)
	}
	return env
}

func (e *Env) buildManager(ctx context.Context) error {
	key := e.Config.E2BAPIKey
	var hc *http.Client
	if key == "" {
		sm := secretsmanager.NewFromConfig(e.AWS, func(so *secretsmanager.Options) {
			so.BaseEndpoint = e.Endpoint("SECRETS_MANAGER")
		})
		arn := e.Config.E2BSecretARN
		k, err := e2bKey(ctx, sm, arn)
		if err != nil {
			return err
		}
		key = k
		e.transport = e2bTransport()
		hc = &http.Client{Transport: &keyRotator{base: e.transport, key: key, now: e.Now, log: e.Log,
			read: func(ctx context.Context) (string, error) { return e2bKey(ctx, sm, arn) }}}
	}
	client, err := e2b.New(e2b.Config{APIKey: key, APIURL: e.Config.E2BAPIURL, SandboxURL: e.Config.E2BSandboxURL,
		Domain: e.Config.E2BDomain, HTTPClient: hc})
	if err != nil {
		return fmt.Errorf("E2B client: %w", err)
	}
	e.e2b, e.Sandboxes = client, sandboxes.New(client)
	deps := session.Deps{Store: e.Store, Sandboxes: e.Sandboxes, Clock: e.Clock(), Logger: e.Log,
		Fetcher: urlfetch.New(urlfetch.Options{AllowPrivate: e.Config.Session.URLUploads.AllowPrivate})}
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

// Close releases the E2B client's idle connections.
func (e *Env) Close() error {
	if e.transport != nil {
		e.transport.CloseIdleConnections()
	}
	if e.e2b != nil {
		return e.e2b.Close()
	}
	return nil
}
