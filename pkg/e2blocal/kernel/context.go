//go:build linux

package kernel

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Languages a context can run: python; bash (a persistent shell driven by
// the same kernel program, so it costs no new runtime); javascript and
// typescript (Node running kernel.js, TypeScript stripped of its types).
const (
	langPython     = "python"
	langBash       = "bash"
	langJavaScript = "javascript"
	langTypeScript = "typescript"
)

func supportedLanguage(l string) bool {
	switch l {
	case langPython, langBash, langJavaScript, langTypeScript:
		return true
	}
	return false
}

// nodeLanguage reports whether l runs on Node (kernel.js) rather than Python.
func nodeLanguage(l string) bool { return l == langJavaScript || l == langTypeScript }

var errContextGone = errors.New("context was deleted")

// kctx is one execution context: a language, a cwd and (once used) a kernel process.
type kctx struct {
	id       string
	language string
	cwd      string
	srv      *Server
	// asServer runs the kernel as the server itself (root in a sandbox)
	// rather than Config.Credential: its cwd is closed to that user.
	asServer bool

	// sem is held by the running execution or lifecycle operation, so
	// executions on one context run one at a time.
	sem chan struct{}

	mu      sync.Mutex
	p       *proc
	deleted bool
	// lost is set when the kernel was found dead between executions (killed
	// behind the server's back) and replaced: the next execution reports
	// that the state it had is gone. A restart (by anyone: the routes are
	// E2B's, open to every caller of the sandbox) sets it too.
	lost bool
	// ran is set once an execution ran on the current kernel: only then
	// does replacing it lose state worth reporting.
	ran bool
}

func newContext(s *Server, language, cwd string) *kctx {
	return &kctx{id: newID(), language: language, cwd: cwd, srv: s, sem: make(chan struct{}, 1)}
}

// newID returns a random UUID (v4), the shape of Jupyter kernel ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// normalizeLanguage applies the E2B server's language aliases.
func normalizeLanguage(l string) string {
	l = strings.ToLower(strings.TrimSpace(l))
	switch l {
	case "", "python3", "py":
		return langPython
	case "js":
		return "javascript"
	case "ts":
		return "typescript"
	}
	return l
}

// acquire takes the context's execution slot, or fails when ctx ends first.
func (c *kctx) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for context %s: %w", c.id, ctx.Err())
	}
}

func (c *kctx) tryAcquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (c *kctx) release() { <-c.sem }

// ensure returns the context's live kernel, starting one when there is none or
// the last one died. The caller holds the execution slot.
func (c *kctx) ensure(ctx context.Context) (*proc, error) {
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return nil, errContextGone
	}
	if p := c.p; p != nil {
		select {
		case <-p.done:
			c.p = nil
			c.lost = true
		default:
			c.mu.Unlock()
			return p, nil
		}
	}
	c.mu.Unlock()
	p, err := startProc(ctx, c.srv.procSpec(c.language, c.cwd, c.asServer), c.srv.tune.startTimeout)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", c.id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		p.kill()
		<-p.done
		return nil, errContextGone
	}
	c.p = p
	return p, nil
}

// takeLost reports, once, that the kernel was replaced (it died between
// executions, or was restarted) and marks the kernel as holding state: the
// caller is about to run an execution on it.
func (c *kctx) takeLost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lost := c.lost
	c.lost, c.ran = false, true
	return lost
}

// replaced notes that the kernel was replaced on request: its state, if an
// execution left any, is gone, and the next execution says so.
func (c *kctx) replaced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost = c.lost || c.ran
	c.ran = false
}

// hadState reports whether an execution ran on the context's kernel.
func (c *kctx) hadState() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ran || c.lost
}

// forget drops p as the context's kernel after it died.
func (c *kctx) forget(p *proc) {
	c.mu.Lock()
	if c.p == p {
		c.p = nil
	}
	c.mu.Unlock()
}

// stopKernel kills the current kernel (a running execution then ends with an
// error) and waits until it is gone.
func (c *kctx) stopKernel(deleted bool) {
	c.mu.Lock()
	p := c.p
	c.p = nil
	if deleted {
		c.deleted = true
	}
	c.mu.Unlock()
	if p != nil {
		p.kill()
		<-p.done
	}
}

// restart replaces the kernel by a fresh one: variables are gone. A
// context whose kernel never started (or was stopped) stays that way: its
// next use starts a fresh one, so restarting every context (a session's
// reset) does not start the idle default ones, node's included.
func (c *kctx) restart(ctx context.Context) error {
	c.mu.Lock()
	had := c.p != nil
	c.mu.Unlock()
	c.stopKernel(false)
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	c.stopKernel(false)
	c.replaced()
	if !had {
		return c.gone()
	}
	_, err := c.ensure(ctx)
	return err
}

func (c *kctx) gone() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		return errContextGone
	}
	return nil
}

func (c *kctx) destroy() { c.stopKernel(true) }
