package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StartOptions shape a sandbox a start creates. A session whose sandbox runs
// already keeps it as it is.
type StartOptions struct {
	Type     SandboxType
	Template string
	Envs     map[string]string
	Metadata map[string]string
	// IdleTimeoutSecs overrides the configured idle timeout (up to the
	// lifetime) when non-zero.
	IdleTimeoutSecs int
	// Pause pauses the sandbox when idle instead of killing it.
	Pause bool
	// Persist, when set, turns the session's workspace on or off; a
	// session keeps its workspace by default.
	Persist *bool
}

// Start starts the session's sandbox, or returns it when it runs already
// (resuming a paused one).
func (m *Manager) Start(ctx context.Context, key Key, opts StartOptions) (*Session, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := m.validateStartOptions(opts); err != nil {
		return nil, err
	}
	var out *Session
	_, err := m.withSandbox(ctx, key, &opts, func(_ context.Context, s *Session) (bool, error) {
		out = s
		return false, nil
	})
	return out, err
}

// Stop kills the session's sandbox; the record stays, as stopped. Stopping a
// stopped session returns it unchanged.
func (m *Manager) Stop(ctx context.Context, key Key) (*Session, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	return m.stop(ctx, key, true)
}

// stop is Stop; save takes a checkpoint of the workspace before the kill.
func (m *Manager) stop(ctx context.Context, key Key, save bool) (*Session, error) {
	owner := randomID(16)
	wait := newBackoff()
	for attempt := 0; attempt < maxTransitions; {
		s, err := m.store.GetSession(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read session %q: %w", key.SessionID, err)
		}
		now := m.clock.Now()
		if !s.State.Live() {
			return s, nil
		}
		if s.State == StateStopping && leaseHeld(s, now) {
			if err := wait.sleep(ctx, s.LeaseUntil.Sub(now)); err != nil {
				return nil, ctxError(err, "waiting for the sandbox to stop")
			}
			continue
		}
		// A start in progress loses its lease here: its final write fails
		// and it kills the sandbox it made.
		out, err := m.stopSession(ctx, s, owner, save)
		if errors.Is(err, errRetry) {
			attempt++
			continue
		}
		return out, err
	}
	return nil, &Error{Kind: ErrConflict, Detail: "the session kept changing under concurrent calls; try again", RetryAfter: time.Second}
}

// stopSession moves s to stopping under our lease, checkpoints the
// workspace when save is set, kills its sandbox and records it stopped.
// When the kill fails, the record stays stopping with a due time, so the
// reaper finishes the job. A checkpoint that fails does not hold the stop
// up: the previous checkpoint stays, and the failure is logged.
func (m *Manager) stopSession(ctx context.Context, cur *Session, owner string, save bool) (*Session, error) {
	s := *cur
	m.lease(&s, StateStopping, owner, m.clock.Now())
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return nil, errRetry
	} else if err != nil {
		return nil, fmt.Errorf("mark session %q stopping: %w", cur.SessionID, err)
	}
	// From here the stop must finish even if the caller hangs up: a kill
	// cut short would leave the sandbox running until the reaper's turn.
	dctx, cancel := detach(ctx)
	defer cancel()
	if save && s.SandboxID != "" && m.persists(&s) {
		snap := s
		wctx, release := m.holdLease(dctx, &s)
		m.saveBefore(wctx, &snap, "stop")
		if lost := release(); lost != nil {
			return nil, lost
		}
		s.LastCheckpoint, s.CheckpointProblem, s.CheckpointTriedAt = snap.LastCheckpoint, snap.CheckpointProblem, snap.CheckpointTriedAt
	}
	if s.SandboxID != "" {
		if err := m.sandboxes.Kill(dctx, s.SandboxID); err != nil {
			return nil, fmt.Errorf("kill sandbox %s: %w", s.SandboxID, err)
		}
	}
	now := m.clock.Now()
	held := s.Slot
	s.State = StateStopped
	s.LeaseOwner, s.LeaseUntil = "", time.Time{}
	s.Slot = ""
	s.ExpiresAt = m.stoppedExpiry(&s, now)
	setDue(&s)
	if err := m.store.UpdateSession(dctx, &s); errors.Is(err, ErrConflict) {
		return nil, errRetry
	} else if err != nil {
		return nil, fmt.Errorf("mark session %q stopped: %w", cur.SessionID, err)
	}
	m.giveBackSlot(dctx, s.Tenant, held)
	return &s, nil
}

// Status returns the session as it stands, deadlines applied (see view).
func (m *Manager) Status(ctx context.Context, key Key) (*Session, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	s, err := m.store.GetSession(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read session %q: %w", key.SessionID, err)
	}
	v, ok := m.view(s, m.clock.Now())
	if !ok {
		return nil, unknownSession(key)
	}
	return v, nil
}

// List pages through the principal's sessions in id order; limit 0 means
// 50, at most 100. An empty cursor in return means the last page.
func (m *Manager) List(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*Session, string, error) {
	if tenant == "" || principal == "" {
		return nil, "", Errorf(ErrInvalid, "tenant and principal are required")
	}
	switch {
	case limit == 0:
		limit = 50
	case limit < 0 || limit > 100:
		return nil, "", Errorf(ErrInvalid, "limit must be between 1 and 100")
	}
	if len(cursor) > 2048 {
		return nil, "", Errorf(ErrInvalid, "cursor is malformed")
	}
	all, next, err := m.store.ListSessions(ctx, tenant, principal, limit, cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list sessions: %w", err)
	}
	now := m.clock.Now()
	out := make([]*Session, 0, len(all))
	for _, s := range all {
		if v, ok := m.view(s, now); ok {
			out = append(out, v)
		}
	}
	return out, next, nil
}

// touch records activity on a running session at most once per
// ActivityWriteInterval, and refreshes the provider's timeout with it; the
// first activity after a checkpoint is always recorded, so the reaper knows
// the workspace changed since and saves it again (one write per checkpoint
// at most). It
// returns ErrSandboxGone when the provider no longer has the sandbox (no
// code has been sent yet, so replacing it is safe) and errRetry when the
// record changed under us.
func (m *Manager) touch(ctx context.Context, cur *Session) (*Session, error) {
	now := m.clock.Now()
	sinceCheckpoint := m.persists(cur) && !cur.LastCheckpoint.At.IsZero() && !cur.LastActivityAt.After(cur.LastCheckpoint.At)
	if now.Sub(cur.LastActivityAt) < m.activityInterval(cur) && !sinceCheckpoint {
		return cur, nil
	}
	s := *cur
	m.markActive(&s, now)
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return cur, errRetry
	} else if err != nil {
		return cur, fmt.Errorf("record activity of session %q: %w", cur.SessionID, err)
	}
	err := m.sandboxes.SetTimeout(ctx, s.SandboxID, m.providerTimeout(&s, now))
	if errors.Is(err, ErrSandboxGone) {
		return &s, err
	}
	if err != nil {
		// The next activity write tries again; the slack covers the gap.
		m.log.WarnContext(ctx, "refresh sandbox timeout", "sandbox", s.SandboxID, "err", err)
	}
	return m.noteRefresh(ctx, &s, now, err), nil
}

// noteRefresh records in the session (its status shows it) that the
// provider's timeout could not be refreshed, or that it could again. It
// costs a write only when that changes; a lost race leaves it to the next
// activity.
func (m *Manager) noteRefresh(ctx context.Context, s *Session, now time.Time, err error) *Session {
	problem := ""
	if err != nil {
		problem = fmt.Sprintf("refreshing the sandbox's timeout failed at %s (%s): it may end before its idle deadline; the next call tries again",
			now.UTC().Format(time.RFC3339), publicWords(err))
	}
	if problem == s.TimeoutRefreshProblem {
		return s
	}
	n := *s
	n.TimeoutRefreshProblem = problem
	if werr := m.store.UpdateSession(ctx, &n); werr != nil {
		m.log.WarnContext(ctx, "record timeout refresh", "session", s.SessionID, "err", werr)
		return s
	}
	return &n
}

// publicWords is what a caller may read of err: a domain error's detail,
// never the provider's error chain.
func publicWords(err error) string {
	if e, ok := errors.AsType[*Error](err); ok && e.Detail != "" {
		return e.Detail
	}
	return "the sandbox provider did not answer"
}

// activityInterval is the least time between activity writes of s: the
// configured interval, but at most half the session's idle timeout, so a
// short idle timeout never lapses on a session in use.
func (m *Manager) activityInterval(s *Session) time.Duration {
	return min(m.cfg.ActivityWriteInterval, m.idleTimeout(s)/2)
}

func (m *Manager) validateStartOptions(o StartOptions) error {
	switch o.Type {
	case "", TypeCodeInterpreter, TypeCustom:
	default:
		return Errorf(ErrInvalid, "type must be %q or %q", TypeCodeInterpreter, TypeCustom)
	}
	if o.Type == TypeCustom && o.Template == "" {
		return Errorf(ErrInvalid, "a custom sandbox needs a template")
	}
	if o.Template != "" && !templateRE().MatchString(o.Template) {
		return Errorf(ErrInvalid, "template must match %s", templateRE())
	}
	if o.IdleTimeoutSecs < 0 || time.Duration(o.IdleTimeoutSecs)*time.Second > m.cfg.Lifetime {
		return Errorf(ErrInvalid, "idleTimeoutSecs must be between 0 and %d", int(m.cfg.Lifetime/time.Second))
	}
	if err := validateStringMap("envs", o.Envs, envNameRE()); err != nil {
		return err
	}
	return validateStringMap("metadata", o.Metadata, metaKeyRE())
}
