package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxContexts is how many contexts a session's sandbox may hold at once
// besides its default one: each is a kernel process of its own.
const MaxContexts = 10

// maxStaleContexts bounds how many contexts of earlier sandboxes a record
// keeps, only so that using one says it is gone rather than unknown.
const maxStaleContexts = MaxContexts

// languageRE is the shape of a context's language; which languages exist
// is the provider's to say.
var languageRE = lazyRegexp(`^[a-z][a-z0-9+-]{0,31}$`)

// CodeContext is an interpreter context of a session's sandbox: a kernel of
// its own, with its own variables and working directory, besides the
// default one that executions without a context use. It lives and dies with
// the sandbox it was created in.
type CodeContext struct {
	ID       string
	Language string
	Cwd      string
	// SandboxID is the sandbox the context lives in: once the session's
	// sandbox is another, the context is gone.
	SandboxID string
	CreatedAt time.Time
}

// ContextRequest asks for a new context.
type ContextRequest struct {
	// Language is "python" when empty.
	Language string
	// Cwd is the context's working directory, absolute or relative to
	// /home/user; /home/user when empty.
	Cwd string
}

// CreateContext starts a new interpreter context in the session's sandbox,
// starting the sandbox first as execute does, and records it in the session
// so that later calls know which sandbox it belongs to.
func (m *Manager) CreateContext(ctx context.Context, key Key, req ContextRequest) (*CodeContext, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	req, err := cleanContextRequest(req)
	if err != nil {
		return nil, err
	}
	var out CodeContext
	_, err = m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		if n := len(liveContexts(s)); n >= MaxContexts {
			return false, &Error{Kind: ErrLimit, Detail: fmt.Sprintf("session %q already has %d contexts, the most it may hold; delete one first", key.SessionID, n)}
		}
		c, err := m.sandboxes.CreateContext(ctx, s.SandboxID, req)
		if err != nil {
			return errors.Is(err, ErrSandboxGone), fmt.Errorf("create a %s context in %s: %w", req.Language, req.Cwd, err)
		}
		c.SandboxID, c.CreatedAt = s.SandboxID, m.clock.Now().UTC()
		if err := m.recordContext(ctx, s, c); err != nil {
			dctx, cancel := detach(ctx)
			defer cancel()
			if rerr := m.sandboxes.RemoveContext(dctx, s.SandboxID, c.ID); rerr != nil {
				m.log.WarnContext(ctx, "remove unrecorded context", "sandbox", s.SandboxID, "context", c.ID, "err", rerr)
			}
			return false, err
		}
		out = c
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListContexts returns the contexts of the session's current sandbox, oldest
// first, from the session's record: it starts and resumes nothing. A session
// without a sandbox has none.
func (m *Manager) ListContexts(ctx context.Context, key Key) ([]CodeContext, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	s, err := m.readSession(ctx, key)
	if err != nil {
		return nil, err
	}
	return liveContexts(s), nil
}

// DeleteContext shuts a context down and forgets it. Deleting a context whose
// sandbox is gone only forgets it.
func (m *Manager) DeleteContext(ctx context.Context, key Key, id string) error {
	if err := validateContextCall(key, id); err != nil {
		return err
	}
	s, err := m.readSession(ctx, key)
	if err != nil {
		return err
	}
	c := findContext(s, id)
	if c == nil {
		return contextNotFound(key, id)
	}
	if isLive(s, c) {
		err := m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
			if s.SandboxID != c.SandboxID {
				return false, nil
			}
			if err := m.sandboxes.RemoveContext(ctx, s.SandboxID, id); err != nil && !errors.Is(err, ErrNotFound) {
				return false, fmt.Errorf("remove context %q from sandbox %s: %w", id, s.SandboxID, err)
			}
			return false, nil
		})
		if err != nil && !errors.Is(err, errNoSandbox) {
			return err
		}
	}
	return m.editContexts(ctx, key, nil, func(s *Session) error {
		s.Contexts = slices.DeleteFunc(slices.Clone(s.Contexts), func(c CodeContext) bool { return c.ID == id })
		return nil
	})
}

// ResetContext restarts a context's kernel: its variables go, its working
// directory and the sandbox's files stay.
func (m *Manager) ResetContext(ctx context.Context, key Key, id string) error {
	if err := validateContextCall(key, id); err != nil {
		return err
	}
	s, err := m.readSession(ctx, key)
	if err != nil {
		return err
	}
	if _, err := usableContext(key, s, id); err != nil {
		return err
	}
	err = m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		if _, err := usableContext(key, s, id); err != nil {
			return false, err
		}
		if err := m.sandboxes.RestartContext(ctx, s.SandboxID, id); err != nil {
			if errors.Is(err, ErrNotFound) {
				return false, contextLost(key, id)
			}
			return false, fmt.Errorf("restart context %q in sandbox %s: %w", id, s.SandboxID, err)
		}
		return false, nil
	})
	if errors.Is(err, errNoSandbox) {
		return contextGoneWith(key, id, "the session's sandbox is gone")
	}
	return err
}

// checkContext reads the session and says whether an execution or a reset
// may use context id: unknown and gone contexts are refused before any
// sandbox is started for them.
func (m *Manager) checkContext(ctx context.Context, key Key, id string) error {
	s, err := m.store.GetSession(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return contextNotFound(key, id)
	}
	if err != nil {
		return fmt.Errorf("read session %q: %w", key.SessionID, err)
	}
	v, ok := m.recorded(s)
	if !ok {
		return contextNotFound(key, id)
	}
	_, err = usableContext(key, v, id)
	return err
}

// usableContext returns context id of s when it lives in s's sandbox.
func usableContext(key Key, s *Session, id string) (*CodeContext, error) {
	c := findContext(s, id)
	if c == nil {
		return nil, contextNotFound(key, id)
	}
	if !isLive(s, c) {
		return nil, contextGone(key, s, c)
	}
	return c, nil
}

// recordContext adds c to the session's record, dropping the oldest contexts
// of earlier sandboxes past maxStaleContexts. s is the record the caller
// just acquired: the first write is tried on it, saving a read.
func (m *Manager) recordContext(ctx context.Context, s *Session, c CodeContext) error {
	dctx, cancel := detach(ctx)
	defer cancel()
	return m.editContexts(dctx, s.Key, s, func(s *Session) error {
		if s.SandboxID != c.SandboxID || !s.State.Live() {
			return contextGoneWith(s.Key, c.ID, "the session's sandbox was replaced or stopped while it was being created")
		}
		if n := len(liveContexts(s)); n >= MaxContexts {
			return &Error{Kind: ErrLimit, Detail: fmt.Sprintf("session %q already has %d contexts, the most it may hold; delete one first", s.SessionID, n)}
		}
		s.Contexts = append(pruneStale(s), c)
		return nil
	})
}

// editContexts applies edit to the session's record and writes it, reading
// the record again after a lost race. first, when not nil, is tried before
// any read.
func (m *Manager) editContexts(ctx context.Context, key Key, first *Session, edit func(s *Session) error) error {
	for range maxTransitions {
		var s *Session
		if first != nil {
			cp := *first
			cp.Contexts = slices.Clone(first.Contexts)
			s, first = &cp, nil
		} else {
			cur, err := m.store.GetSession(ctx, key)
			if errors.Is(err, ErrNotFound) {
				return unknownSession(key)
			}
			if err != nil {
				return fmt.Errorf("read session %q: %w", key.SessionID, err)
			}
			s = cur
		}
		if err := edit(s); err != nil {
			return err
		}
		err := m.store.UpdateSession(ctx, s)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("record the contexts of session %q: %w", key.SessionID, err)
		}
		return nil
	}
	return &Error{Kind: ErrConflict, Detail: "the session kept changing under concurrent calls; try again", RetryAfter: time.Second}
}

// readSession is the session's record for a read that starts nothing: an
// unknown or expired one is ErrNotFound.
func (m *Manager) readSession(ctx context.Context, key Key) (*Session, error) {
	s, err := m.store.GetSession(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, unknownSession(key)
	}
	if err != nil {
		return nil, fmt.Errorf("read session %q: %w", key.SessionID, err)
	}
	v, ok := m.recorded(s)
	if !ok {
		return nil, unknownSession(key)
	}
	return v, nil
}

// recorded is the record as the next call would find it: false when it
// reads as gone, and without its sandbox once past its lifetime (the next
// call replaces it). A passed idle deadline alone changes nothing: until
// the reaper acts, the next call uses the sandbox.
func (m *Manager) recorded(s *Session) (*Session, bool) {
	now := m.clock.Now()
	if _, ok := m.view(s, now); !ok {
		return nil, false
	}
	if sandboxHeld(s) && expiredLifetime(s, now) {
		c := *s
		c.State = StateStopped
		return &c, true
	}
	return s, true
}

func findContext(s *Session, id string) *CodeContext {
	for i := range s.Contexts {
		if s.Contexts[i].ID == id {
			return &s.Contexts[i]
		}
	}
	return nil
}

// isLive reports whether c lives in the sandbox s has now.
func isLive(s *Session, c *CodeContext) bool {
	return sandboxHeld(s) && c.SandboxID == s.SandboxID
}

// sandboxHeld reports whether s (as m.recorded shows it) has a sandbox.
func sandboxHeld(s *Session) bool {
	switch s.State {
	case StateRunning, StatePaused, StatePausing:
		return s.SandboxID != ""
	}
	return false
}

// liveContexts are the contexts of the session's current sandbox.
func liveContexts(s *Session) []CodeContext {
	out := []CodeContext{}
	for _, c := range s.Contexts {
		if isLive(s, &c) {
			out = append(out, c)
		}
	}
	return out
}

// pruneStale returns s's contexts without the oldest of those of other
// sandboxes past maxStaleContexts.
func pruneStale(s *Session) []CodeContext {
	stale := 0
	for _, c := range s.Contexts {
		if c.SandboxID != s.SandboxID {
			stale++
		}
	}
	drop := stale - maxStaleContexts + 1
	return slices.DeleteFunc(slices.Clone(s.Contexts), func(c CodeContext) bool {
		if drop > 0 && c.SandboxID != s.SandboxID {
			drop--
			return true
		}
		return false
	})
}

func cleanContextRequest(req ContextRequest) (ContextRequest, error) {
	req.Language = strings.ToLower(strings.TrimSpace(req.Language))
	if req.Language == "" {
		req.Language = "python"
	}
	if !languageRE().MatchString(req.Language) {
		return req, Errorf(ErrInvalid, "language must match %s", languageRE())
	}
	if req.Cwd == "" {
		req.Cwd = WorkDir
	}
	cwd, err := CleanPath(req.Cwd)
	if se, ok := errors.AsType[*Error](err); ok {
		return req, &Error{Kind: ErrInvalid, Detail: "cwd: " + se.Detail}
	}
	req.Cwd = cwd
	return req, nil
}

func validateContextCall(key Key, id string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if !contextRE().MatchString(id) {
		return Errorf(ErrInvalid, "contextId must match %s", contextRE())
	}
	return nil
}

func contextNotFound(key Key, id string) error {
	return Errorf(ErrNotFound, "context %q not found in session %q; create one with POST /v1/sessions/%s/contexts", id, key.SessionID, key.SessionID)
}

// contextGone says why a recorded context no longer exists: its sandbox was
// replaced (when, if known) or stopped.
func contextGone(key Key, s *Session, c *CodeContext) error {
	why := "the session's sandbox was stopped after it was created"
	if sandboxHeld(s) {
		why = "the session's sandbox was replaced"
		if !s.SandboxStartedAt.IsZero() {
			why += " at " + s.SandboxStartedAt.UTC().Format(time.RFC3339)
		}
		why += " after it was created"
	}
	return contextGoneWith(key, c.ID, why)
}

func contextGoneWith(key Key, id, why string) error {
	return &Error{Kind: ErrGone, Detail: fmt.Sprintf("context %q of session %q is gone: %s; contexts from before are gone with their sandbox, create a new one", id, key.SessionID, why)}
}

// contextLost is a recorded context its sandbox no longer has.
func contextLost(key Key, id string) error {
	return contextGoneWith(key, id, "the sandbox no longer has it")
}
