// Package sandboxes is the session.Sandboxes adapter over pkg/e2b: it gives
// sessions E2B sandboxes (or the local runtime's, which speak the same
// protocols) and translates E2B's errors into the domain's.
package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// maxHandles bounds the cache of sandbox handles; a miss costs one GetInfo.
const maxHandles = 4096

// E2B implements session.Sandboxes with an E2B client.
type E2B struct {
	client *e2b.Client
	opts   Options

	mu      sync.Mutex
	handles map[string]*e2b.Sandbox
}

var _ session.Sandboxes = (*E2B)(nil)

// Options tune the adapter.
type Options struct {
	// Private creates sandboxes with E2B's network.allowPublicTraffic
	// false: their ports (the interpreter's included) answer only requests
	// carrying the sandbox's traffic access token, which only this adapter
	// (the service) holds and sends. Local mode sets it, so another user of
	// the machine who learns a sandbox's id cannot reach it.
	Private bool
}

// New adapts client.
func New(client *e2b.Client) *E2B { return NewWith(client, Options{}) }

// NewWith adapts client with opts.
func NewWith(client *e2b.Client, opts Options) *E2B {
	return &E2B{client: client, opts: opts, handles: map[string]*e2b.Sandbox{}}
}

// Create starts a sandbox. The client repeats it only on E2B's 429 (which
// creates nothing), for a bounded while; any other failed create is not
// retried: it may have created a sandbox, which the reaper's orphan sweep
// then finds by metadata.
func (a *E2B) Create(ctx context.Context, spec session.SandboxSpec) (session.SandboxInfo, error) {
	internet := spec.AllowInternetAccess
	sb, err := a.client.Create(ctx, e2b.CreateParams{
		Template:            spec.Template,
		Timeout:             spec.Timeout,
		Metadata:            spec.Metadata,
		Envs:                spec.Envs,
		AutoPause:           spec.AutoPause,
		AllowInternetAccess: &internet,
		AllowPublicTraffic:  a.publicTraffic(),
	})
	if err != nil {
		return session.SandboxInfo{}, domainError("create sandbox", err)
	}
	a.remember(sb)
	now := time.Now()
	return session.SandboxInfo{ID: sb.ID, Template: spec.Template, State: session.StateRunning,
		Metadata: spec.Metadata, StartedAt: now, EndAt: now.Add(spec.Timeout)}, nil
}

// publicTraffic is the create's network.allowPublicTraffic: nil (E2B's
// default, public) unless the adapter is private.
func (a *E2B) publicTraffic() *bool {
	if !a.opts.Private {
		return nil
	}
	public := false
	return &public
}

// Connect makes sure the sandbox runs, resuming it if paused, and sets its
// timeout.
func (a *E2B) Connect(ctx context.Context, id string, timeout time.Duration) (session.SandboxInfo, error) {
	sb, err := a.client.Connect(ctx, id, e2b.ConnectParams{Timeout: timeout})
	if err != nil {
		return session.SandboxInfo{}, domainError("connect to sandbox", err)
	}
	a.remember(sb)
	return session.SandboxInfo{ID: sb.ID, Template: sb.TemplateID, State: session.StateRunning}, nil
}

// Get describes one sandbox.
func (a *E2B) Get(ctx context.Context, id string) (session.SandboxInfo, error) {
	info, err := a.client.GetInfo(ctx, id)
	if err != nil {
		return session.SandboxInfo{}, domainError("get sandbox", err)
	}
	return infoFrom(*info), nil
}

// List returns every sandbox whose metadata holds the given pairs.
func (a *E2B) List(ctx context.Context, metadata map[string]string) ([]session.SandboxInfo, error) {
	var out []session.SandboxInfo
	var seq iter.Seq2[e2b.SandboxInfo, error] = a.client.List(ctx, e2b.ListParams{Metadata: metadata, Limit: 100})
	for info, err := range seq {
		if err != nil {
			return nil, domainError("list sandboxes", err)
		}
		out = append(out, infoFrom(info))
	}
	return out, nil
}

// Kill removes a sandbox; one that is gone already counts as killed.
func (a *E2B) Kill(ctx context.Context, id string) error {
	a.forget(id)
	err := a.client.Kill(ctx, id)
	if errors.Is(err, e2b.ErrSandboxNotFound) {
		return nil
	}
	return domainError("kill sandbox", err)
}

// Pause pauses a sandbox; one paused already counts as paused.
func (a *E2B) Pause(ctx context.Context, id string) error {
	err := a.client.Pause(ctx, id)
	if errors.Is(err, e2b.ErrConflict) {
		return nil
	}
	return domainError("pause sandbox", err)
}

// SetTimeout sets E2B's own timeout of the sandbox.
func (a *E2B) SetTimeout(ctx context.Context, id string, timeout time.Duration) error {
	return domainError("set sandbox timeout", a.client.SetTimeout(ctx, id, timeout))
}

// handle returns a handle to reach the sandbox's envd and interpreter. The
// access and traffic tokens come from Create or Connect; after a cold start
// they cost one GetInfo.
func (a *E2B) handle(ctx context.Context, id string) (*e2b.Sandbox, error) {
	a.mu.Lock()
	sb, ok := a.handles[id]
	a.mu.Unlock()
	if ok {
		return sb, nil
	}
	info, err := a.client.GetInfo(ctx, id)
	if err != nil {
		return nil, domainError("look up sandbox", err)
	}
	p := e2b.AttachParams{AccessToken: info.EnvdAccessToken, EnvdVersion: info.EnvdVersion}
	if info.Domain != nil {
		p.Domain = *info.Domain
	}
	if info.TrafficAccessToken != nil {
		p.TrafficAccessToken = *info.TrafficAccessToken
	}
	sb = a.client.Attach(id, p)
	a.remember(sb)
	return sb, nil
}

func (a *E2B) remember(sb *e2b.Sandbox) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.handles) >= maxHandles {
		// Handles are cheap to rebuild; dropping them all keeps this simple
		// and bounded.
		clear(a.handles)
	}
	a.handles[sb.ID] = sb
}

func (a *E2B) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.handles, id)
}

func infoFrom(i e2b.SandboxInfo) session.SandboxInfo {
	st := session.StateRunning
	if i.State == e2b.StatePaused {
		st = session.StatePaused
	}
	return session.SandboxInfo{ID: i.SandboxID, Template: i.TemplateID, State: st,
		Metadata: i.Metadata, StartedAt: i.StartedAt, EndAt: i.EndAt}
}

// domainError translates an E2B failure into the domain's error kinds.
func domainError(doing string, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", doing, err)
	case errors.Is(err, e2b.ErrSandboxNotFound):
		kind = session.ErrSandboxGone
	case errors.Is(err, e2b.ErrNotFound):
		kind = session.ErrNotFound
	case errors.Is(err, e2b.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		kind = session.ErrTimeout
	case errors.Is(err, e2b.ErrRateLimited):
		e := &session.Error{Kind: session.ErrLimit, Detail: doing + ": the sandbox provider is rate limiting", Err: err}
		var ee *e2b.Error
		if errors.As(err, &ee) {
			e.RetryAfter = ee.RetryAfter
		}
		return e
	case overloaded(err):
		// Backpressure (a 503 with Retry-After, as the local runtime
		// answers a start that timed out on a busy host): the caller
		// is to come back, as for a rate limit.
		ee, _ := errors.AsType[*e2b.Error](err)
		return &session.Error{Kind: session.ErrLimit, RetryAfter: ee.RetryAfter, Err: err,
			Detail: fmt.Sprintf("%s: the sandbox provider is overloaded; try again in %d s", doing, int(ee.RetryAfter.Round(time.Second)/time.Second))}
	case errors.Is(err, e2b.ErrPermissionDenied):
		return &session.Error{Kind: session.ErrForbidden, Detail: doing + ": permission denied (the sandbox's user may not change it)", Err: err}
	case errors.Is(err, e2b.ErrInvalidArgument):
		// The sandbox's own words say what to change (e.g. "use a smaller
		// depth").
		e := &session.Error{Kind: session.ErrInvalid, Detail: doing, Err: err}
		if ee, ok := errors.AsType[*e2b.Error](err); ok && ee.Message != "" {
			e.Detail = doing + ": " + ee.Message
		}
		return e
	case errors.Is(err, e2b.ErrAlreadyExists), errors.Is(err, e2b.ErrConflict):
		kind = session.ErrConflict
	case errors.Is(err, e2b.ErrNotEnoughSpace):
		if ee, ok := errors.AsType[*e2b.Error](err); ok {
			// The local runtime's envd names the per-file limit; a
			// file past it is no full disk.
			if _, limit, found := strings.Cut(ee.Message, "per-file size limit"); found {
				return &session.Error{Kind: session.ErrTooLarge, Detail: doing + ": the file would pass the sandbox's per-file size limit" + limit, Err: err}
			}
			// The local runtime's free-space floor (a home it cannot
			// promise, the host disk low) is the host's, not the sandbox's.
			if strings.Contains(ee.Message, "free disk space") {
				return &session.Error{Kind: problem.ErrInsufficientStorage, Detail: doing + ": " + ee.Message, Err: err}
			}
		}
		return &session.Error{Kind: session.ErrTooLarge, Detail: doing + ": the sandbox's disk is full", Err: err}
	default:
		// Authentication failures are ours (a bad E2B key), not the
		// caller's: they read as the provider being unavailable.
		kind = session.ErrUnavailable
	}
	return &session.Error{Kind: kind, Detail: doing + ": " + causeWords[kind], Err: err}
}

// overloaded reports whether err is the provider asking to be called
// again later: unavailable, with a Retry-After.
func overloaded(err error) bool {
	ee, ok := errors.AsType[*e2b.Error](err)
	return ok && ee.RetryAfter > 0 && errors.Is(err, e2b.ErrUnavailable)
}

// causeWords says what went wrong in words a caller can act on; the
// provider's own error stays in the chain for the logs.
var causeWords = map[error]string{
	session.ErrSandboxGone: "the sandbox is gone",
	session.ErrNotFound:    "no such file or directory",
	session.ErrTimeout:     "the sandbox did not answer in time",
	session.ErrConflict:    "it exists already or changed meanwhile",
	session.ErrUnavailable: "the sandbox provider is unavailable; try again",
}

// noDir words a missing directory as one.
func noDir(err error) error {
	var se *session.Error
	if errors.As(err, &se) && se.Kind == session.ErrNotFound {
		se.Detail = strings.TrimSuffix(se.Detail, causeWords[session.ErrNotFound]) + "no such directory"
	}
	return err
}
