//go:build linux

package kernel

import (
	"context"
	"fmt"
	"maps"
	"strings"
)

// A standby kernel is the default python context's kernel started before
// the server that will own it exists: the runtime starts one in each
// sandbox waiting in its warm pool, so a new sandbox's first execution
// finds Python running instead of paying its ~40 ms start. It starts with
// the base environment; the sandbox's own variables are set in it when it
// is adopted, before any cell can run (frames on the command pipe are
// handled in order).

// frameSetEnv sets environment variables in a kernel for good.
const frameSetEnv = 'V'

// Standby is a kernel starting or started ahead of its server.
type Standby struct {
	spec   procSpec
	cancel context.CancelFunc
	done   chan struct{}
	p      *proc
	err    error
}

// StartStandby starts, in the background, the kernel a server built from
// cfg would start for its default python context.
func StartStandby(cfg Config) *Standby {
	cfg = withDefaults(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	st := &Standby{spec: defaultSpec(cfg, defaultMaxFrame), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		st.p, st.err = startProc(ctx, st.spec, defaultTuning.startTimeout)
	}()
	return st
}

// Discard stops the standby kernel, a start under way included, and waits
// until it is gone.
func (st *Standby) Discard() {
	st.cancel()
	<-st.done
	if st.p != nil {
		st.p.kill()
		<-st.p.done
	}
}

// PrewarmFrom is Prewarm with st as the kernel: the default context adopts
// it once it is up and extra (the sandbox's variables beyond the standby's
// environment) is set in it. A standby that failed, or one that cannot
// stand for a kernel of this server (another interpreter, identity or
// environment, or extra naming a variable Python reads only at start),
// is discarded and a kernel started as Prewarm does.
func (s *Server) PrewarmFrom(st *Standby, extra map[string]string) {
	c, err := s.defaultContext(langPython)
	if err != nil {
		st.Discard()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		st.Discard()
		return
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.tune.startTimeout)
		defer cancel()
		if err := c.acquire(ctx); err != nil {
			st.Discard()
			return
		}
		defer c.release()
		if err := c.adopt(st, extra); err != nil {
			st.Discard()
			_, _ = c.ensure(ctx)
		}
	})
}

// adopt makes st's kernel the context's. The caller holds the execution slot.
func (c *kctx) adopt(st *Standby, extra map[string]string) error {
	want := c.srv.procSpec(c.language, c.cwd, c.asServer)
	if err := standsFor(st.spec, want, extra); err != nil {
		return err
	}
	<-st.done
	if st.err != nil {
		return st.err
	}
	if len(extra) > 0 {
		block, err := encodeEnv(extra)
		if err != nil {
			return err
		}
		if err := st.p.send(frameSetEnv, block); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted || c.p != nil {
		return errContextGone
	}
	c.p = st.p
	return nil
}

// standsFor says whether a kernel started from have, with extra set in it
// afterwards, is the kernel want would start.
func standsFor(have, want procSpec, extra map[string]string) error {
	sameCred := (have.cred == nil) == (want.cred == nil) &&
		(have.cred == nil || have.cred.Uid == want.cred.Uid && have.cred.Gid == want.cred.Gid)
	if have.python != want.python || have.compiled != want.compiled || have.lang != want.lang ||
		have.dir != want.dir || have.cap != want.cap || have.maxFrame != want.maxFrame || !sameCred {
		return fmt.Errorf("standby kernel was started for another server")
	}
	for k := range extra {
		if readAtStart(k) {
			return fmt.Errorf("standby kernel: %s takes effect only at start", k)
		}
	}
	env := envMap(have.env)
	maps.Copy(env, extra)
	if !maps.Equal(env, envMap(want.env)) {
		return fmt.Errorf("standby kernel was started with another environment")
	}
	return nil
}

// readAtStart tells the variables Python, its locale, time zone or the
// kernel read while starting, so setting them later would not act.
func readAtStart(k string) bool {
	switch k {
	case "HOME", "LANG", "LANGUAGE", "TZ", "MPLBACKEND":
		return true
	}
	return strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "SESSIONBOX_")
}

// envMap is env as the kernel's process sees it: the last of duplicate keys wins.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
