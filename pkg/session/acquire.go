package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// maxTransitions bounds how often one call re-reads a session after losing a
// race; waiting on someone else's lease does not count against it.
const maxTransitions = 12

// errRetry says a conditional write lost a race: re-read and decide again.
var errRetry = errors.New("session changed concurrently")

// Metadata keys put on every sandbox: the orphan sweep and the tenant cap
// find sandboxes by them, and the sweep finds each one's session.
const (
	MetaStack     = "stack"
	MetaTenant    = "tenant"
	MetaPrincipal = "principal"
	MetaSession   = "session"
	// MetaRecoverHome names, with Config.RecoverHomes, the session's
	// previous sandbox, whose home the local runtime gives the new one when
	// it kept it (serve killed before a checkpoint), the key kept on the
	// sandbox only when it did.
	MetaRecoverHome = "recoverHome"
)

// acquire returns the session's record with its sandbox running, creating
// the record, starting, resuming or replacing the sandbox as needed. opts,
// when not nil, applies to a sandbox this call starts. gone names a sandbox
// the caller has just seen vanish: it is replaced rather than used.
// restarted is set when the session had a sandbox before this call and now
// has another (its kernel state is lost). Without mayStart, a session with
// no usable sandbox (none recorded, stopped, failed, expired or gone) is
// ErrNotFound instead of started: reads must not have a paid side effect.
func (m *Manager) acquire(ctx context.Context, key Key, opts *StartOptions, gone string, mayStart bool) (s *Session, restarted bool, err error) {
	owner := randomID(16)
	wait := newBackoff()
	prior, seen := gone, gone != ""
	waited := false
	for attempt := 0; attempt < maxTransitions; {
		if err := ctx.Err(); err != nil {
			return nil, false, ctxError(err, "waiting for the session's sandbox")
		}
		cur, err := m.store.GetSession(ctx, key)
		if errors.Is(err, ErrNotFound) {
			cur = nil
		} else if err != nil {
			return nil, false, fmt.Errorf("read session %q: %w", key.SessionID, err)
		}
		if !seen && cur != nil {
			prior, seen = cur.SandboxID, true
		}
		now := m.clock.Now()
		var out *Session
		switch {
		case cur == nil && !mayStart:
			return nil, false, unknownSession(key)
		case cur == nil:
			out, err = m.create(ctx, key, opts, owner, now)
		case cur.State == StateRunning && cur.SandboxID != gone && !expiredLifetime(cur, now):
			out = cur
		case resumable(cur, now) && cur.SandboxID != gone && !expiredLifetime(cur, now):
			out, err = m.resume(ctx, cur, now)
			if errors.Is(err, ErrSandboxGone) {
				gone, err = cur.SandboxID, errRetry
			}
		case leaseHeld(cur, now):
			if err := wait.sleep(ctx, cur.LeaseUntil.Sub(now)); err != nil {
				return nil, false, ctxError(err, "waiting for another call to start the sandbox")
			}
			waited = true
			continue
		case waited && cur.State == StateError:
			// The start we waited on failed. Trying again at once, one
			// waiter after another, would only multiply the failure (a
			// provider outage); the caller may retry.
			return nil, false, &Error{Kind: ErrUnavailable, RetryAfter: time.Second,
				Detail: "starting the session's sandbox failed in a concurrent call; try again"}
		case !mayStart:
			return nil, false, noSandbox(key)
		default:
			out, err = m.takeOver(ctx, cur, opts, owner, now)
		}
		if errors.Is(err, errRetry) {
			attempt++
			// Losers of a race usually find the winner's lease on the next
			// read; past the first retry, give the winner a moment.
			if attempt > 1 {
				if err := wait.sleep(ctx, 0); err != nil {
					return nil, false, ctxError(err, "waiting for the session's sandbox")
				}
			}
			continue
		}
		if err != nil {
			return nil, false, err
		}
		return out, prior != "" && out.SandboxID != prior, nil
	}
	return nil, false, &Error{Kind: ErrConflict, Detail: "the session kept changing under concurrent calls; try again", RetryAfter: time.Second}
}

// errNoSandbox marks the ErrNotFound of a session that exists but has no
// sandbox, from that of an unknown session.
var errNoSandbox = errors.New("the session has no sandbox")

// noSandbox is the answer of a read on a session that has no sandbox.
func noSandbox(key Key) error {
	return &Error{Kind: ErrNotFound, Detail: fmt.Sprintf("session %q has no sandbox; run code or start it first", key.SessionID), Err: errNoSandbox}
}

// unknownSession is the answer of every call but those that create a
// session (start, execute, install, runs, file writes and uploads) on a
// session that does not exist: one rule for every route.
func unknownSession(key Key) error {
	return Errorf(ErrNotFound, "session %q not found", key.SessionID)
}

// create writes a new record holding the start lease, then starts the
// sandbox.
func (m *Manager) create(ctx context.Context, key Key, opts *StartOptions, owner string, now time.Time) (*Session, error) {
	s := &Session{Key: key, CreatedAt: now}
	m.applyOptions(s, opts)
	m.lease(s, StateStarting, owner, now)
	slot := m.newSlot(key.Principal, key.SessionID)
	s.Slot = slot.String()
	if err := m.store.CreateSession(ctx, s); errors.Is(err, ErrConflict) {
		return nil, errRetry
	} else if err != nil {
		return nil, fmt.Errorf("create session %q: %w", key.SessionID, err)
	}
	return m.startSandbox(ctx, s, opts, slot)
}

// takeOver moves a session that has no usable sandbox (stopped, failed,
// expired, gone, or held by an expired lease) to starting under our lease,
// kills whatever sandbox it still names, gives back the slot it still
// names, and starts a fresh one.
func (m *Manager) takeOver(ctx context.Context, cur *Session, opts *StartOptions, owner string, now time.Time) (*Session, error) {
	s := *cur
	m.applyOptions(&s, opts)
	m.lease(&s, StateStarting, owner, now)
	slot := m.newSlot(cur.Principal, cur.SessionID)
	s.Slot = slot.String()
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return nil, errRetry
	} else if err != nil {
		return nil, fmt.Errorf("claim session %q for a start: %w", cur.SessionID, err)
	}
	if cur.SandboxID != "" && cur.State.Live() {
		// Expired or abandoned: make sure it does not linger beside the new one.
		if err := m.sandboxes.Kill(ctx, cur.SandboxID); err != nil {
			m.log.WarnContext(ctx, "kill replaced sandbox", "sandbox", cur.SandboxID, "err", err)
		}
	}
	// Ours now: the record no longer names it, so nobody else frees it.
	m.giveBackSlot(ctx, cur.Tenant, cur.Slot)
	return m.startSandbox(ctx, &s, opts, slot)
}

// lease puts s in state st held by owner until the lease duration passes.
func (m *Manager) lease(s *Session, st State, owner string, now time.Time) {
	s.State = st
	s.LeaseOwner = owner
	s.LeaseUntil = now.Add(m.cfg.LeaseDuration)
	s.ExpiresAt = time.Time{}
	setDue(s)
}

// applyOptions sets what a start was asked for; without options, a session
// keeps its own settings and a new one gets the defaults.
func (m *Manager) applyOptions(s *Session, opts *StartOptions) {
	if opts != nil {
		if opts.Type != "" {
			s.Type = opts.Type
		}
		s.Template = opts.Template
		if opts.Metadata != nil {
			s.Metadata = maps.Clone(opts.Metadata)
		}
		s.IdleTimeout = time.Duration(opts.IdleTimeoutSecs) * time.Second
		s.PauseOnIdle = opts.Pause
		if opts.Persist != nil {
			s.NoPersist = !*opts.Persist
		}
	}
	if s.Type == "" {
		s.Type = TypeCodeInterpreter
	}
	if s.Template == "" {
		s.Template = m.cfg.DefaultTemplate
	}
}

// startSandbox takes the tenant's slot the record of s names, creates the
// sandbox for s, which holds our lease, brings its workspace in, and
// records it. When the record changed meanwhile (our lease was taken, or a
// stop came) the new sandbox is killed, the slot given back unless the
// record still names it, and errRetry returned.
func (m *Manager) startSandbox(ctx context.Context, s *Session, opts *StartOptions, slot Slot) (*Session, error) {
	snap := *s
	var restored *RestoreInfo
	info, err := m.createInSlot(ctx, s, m.sandboxSpec(s, opts), slot, func(ctx context.Context, id string) error {
		if m.adoptedHome(ctx, &snap, id) {
			// A home adopted is newer than the workspace: restoring the
			// checkpoint over it would undo the writes since.
			return nil
		}
		var err error
		if restored, err = m.restoreWorkspace(ctx, &snap, id); err != nil {
			return &Error{Kind: ErrUnavailable, RetryAfter: 5 * time.Second,
				Detail: "restoring the session's workspace failed; try again", Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The sandbox exists now: record it even if the caller gave up, or it
	// would run unowned until the orphan sweep.
	dctx, cancel := detach(ctx)
	defer cancel()
	now := m.clock.Now()
	s.State, s.SandboxID, s.SandboxStartedAt = StateRunning, info.ID, now.UTC()
	s.LeaseOwner, s.LeaseUntil = "", time.Time{}
	s.LifetimeDeadline = now.Add(m.sandboxLifetime())
	s.TimeoutRefreshProblem = "" // a fresh sandbox has its timeout from Create
	m.markActive(s, now)
	if err := m.store.UpdateSession(dctx, s); err != nil {
		if kerr := m.sandboxes.Kill(dctx, info.ID); kerr != nil {
			m.log.WarnContext(ctx, "kill unrecorded sandbox", "sandbox", info.ID, "err", kerr)
		}
		if errors.Is(err, ErrConflict) {
			m.dropLostSlot(ctx, s)
			return nil, errRetry
		}
		// The record may or may not say running; either way its sandbox
		// is gone, and whoever finds that gives back nothing more.
		m.giveBackSlot(ctx, s.Tenant, s.Slot)
		return nil, fmt.Errorf("record sandbox of session %q: %w", s.SessionID, err)
	}
	s.Restored = restored
	return s, nil
}

// release gives up our lease on s, leaving it in st (stopped or error) so
// the next call starts afresh, and gives back the slot s names once the
// record no longer does. A lost race is fine: someone else moved on, and
// gives back what the record names.
func (m *Manager) release(ctx context.Context, s *Session, st State) {
	dctx, cancel := detach(ctx)
	defer cancel()
	r := *s
	r.State = st
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	r.Slot = ""
	r.ExpiresAt = m.stoppedExpiry(&r, m.clock.Now())
	setDue(&r)
	err := m.store.UpdateSession(dctx, &r)
	switch {
	case err == nil:
		m.giveBackSlot(ctx, s.Tenant, s.Slot)
	case errors.Is(err, ErrConflict):
		m.dropLostSlot(ctx, s)
	default:
		m.log.WarnContext(ctx, "release start lease", "session", s.SessionID, "err", err)
	}
}

// resumable reports whether s has a sandbox that Connect brings back: a
// paused one, or one whose pause was left unfinished (its lease ran out).
func resumable(s *Session, now time.Time) bool {
	return s.State == StatePaused || s.State == StatePausing && !leaseHeld(s, now)
}

// resume wakes a paused sandbox and records it running.
func (m *Manager) resume(ctx context.Context, cur *Session, now time.Time) (*Session, error) {
	if _, err := m.sandboxes.Connect(ctx, cur.SandboxID, m.providerTimeout(cur, now)); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", cur.SandboxID, err)
	}
	s := *cur
	s.State = StateRunning
	s.LeaseOwner, s.LeaseUntil = "", time.Time{}
	m.markActive(&s, now)
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return nil, errRetry
	} else if err != nil {
		return nil, fmt.Errorf("record resumed session %q: %w", cur.SessionID, err)
	}
	return &s, nil
}

// adoptedHome reports whether sandbox id got the home of the session's
// previous sandbox (Config.RecoverHomes), as its metadata says.
func (m *Manager) adoptedHome(ctx context.Context, s *Session, id string) bool {
	if !m.cfg.RecoverHomes || s.SandboxID == "" {
		return false
	}
	info, err := m.sandboxes.Get(ctx, id)
	if err != nil {
		m.log.WarnContext(ctx, "read a new sandbox's metadata", "sandbox", id, "err", err)
		return false
	}
	return info.Metadata[MetaRecoverHome] == s.SandboxID
}

// sandboxMetadata is the caller's metadata with ours on top, so a caller
// cannot pose as another session or stack.
func (m *Manager) sandboxMetadata(s *Session) map[string]string {
	md := maps.Clone(s.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[MetaTenant], md[MetaPrincipal], md[MetaSession] = s.Tenant, s.Principal, s.SessionID
	delete(md, MetaRecoverHome) // only ever the session's own previous sandbox
	if m.cfg.RecoverHomes && s.SandboxID != "" {
		md[MetaRecoverHome] = s.SandboxID
	}
	if m.cfg.StackID != "" {
		md[MetaStack] = m.cfg.StackID
	}
	return md
}

func (m *Manager) tenantCapError(live int) error {
	return &Error{Kind: ErrLimit, RetryAfter: 30 * time.Second, Detail: fmt.Sprintf(
		"the tenant has %d live sandboxes, the limit is %d: stop a session or wait for idle ones to be reaped",
		live, m.cfg.MaxLiveSandboxesPerTenant)}
}

func (m *Manager) principalCapError(mine int) error {
	return &Error{Kind: ErrLimit, RetryAfter: 30 * time.Second, Detail: fmt.Sprintf(
		"you have %d live sandboxes, your share of the tenant's %d while other principals have sandboxes is %d: stop a session or wait for idle ones to be reaped",
		mine, m.cfg.MaxLiveSandboxesPerTenant, m.cfg.MaxLiveSandboxesPerPrincipal)}
}

// backoff paces polls of a lease someone else holds.
type backoff struct{ next time.Duration }

func newBackoff() *backoff { return &backoff{next: 10 * time.Millisecond} }

// sleep waits for the next poll, and no longer than until (the time left
// on a lease) when that is positive.
func (b *backoff) sleep(ctx context.Context, until time.Duration) error {
	d := b.next
	if until > 0 {
		d = min(d, until)
	}
	b.next = min(b.next*2, 500*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ctxError types a context's error: a deadline is ErrTimeout.
func ctxError(err error, doing string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: ErrTimeout, Detail: "timed out " + doing, Err: err}
	}
	return fmt.Errorf("%s: %w", doing, err)
}
