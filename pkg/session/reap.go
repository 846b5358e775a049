package session

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// ReapReport counts what one reaper tick did.
type ReapReport struct {
	Paused int
	Killed int
	// Recycled counts sessions in use whose sandbox reached its lifetime:
	// checkpointed and killed, the next call restores a fresh one.
	Recycled int
	Orphans  int
	// Slots counts leaked slots of the tenant cap given back.
	Slots  int
	Errors int
}

// reapOutcome is what happened to one due session.
type reapOutcome int

const (
	reapNothing reapOutcome = iota
	reapPaused
	reapKilled
	reapRecycled
	reapFailed
)

// maxOrphanChecks bounds the sandboxes the sweep looks at per tick.
const maxOrphanChecks = 500

// Reap is one reaper tick: it takes a bounded batch of due sessions from the
// deadline index and, for each, pauses it (idle, pausing asked for, lifetime
// left) or kills it (idle otherwise, or lifetime over), finishes stops left
// half done, and clears starts whose lease ran out. Every transition is a
// conditional write made before the provider call, so overlapping ticks and
// concurrent user calls never act twice on one session. Then it sweeps
// orphans: sandboxes of this stack that no live session owns, once older
// than the grace period. Failures on single sessions are counted, not
// returned; the error is for a tick that could not run at all.
func (m *Manager) Reap(ctx context.Context) (ReapReport, error) {
	var rep ReapReport
	now := m.clock.Now()
	due, err := m.store.DueSessions(ctx, now, m.cfg.ReapBatch)
	if skipped, ok := errors.AsType[*SkippedRecordsError](err); ok {
		// Damaged records are counted and named; the rest are reaped.
		m.log.ErrorContext(ctx, "due sessions skipped", "err", skipped)
		rep.Errors += len(skipped.Records)
	} else if err != nil {
		return rep, fmt.Errorf("find due sessions: %w", err)
	}
	outcomes := make([]reapOutcome, len(due))
	m.parallel(ctx, len(due), func(ctx context.Context, i int) {
		outcomes[i] = m.guard(ctx, "reap session "+due[i].SessionID, func() reapOutcome { return m.reapOne(ctx, due[i]) })
	})
	for _, o := range outcomes {
		switch o {
		case reapPaused:
			rep.Paused++
		case reapKilled:
			rep.Killed++
		case reapRecycled:
			rep.Recycled++
		case reapFailed:
			rep.Errors++
		}
	}
	if live, err := m.sandboxes.List(ctx, m.reapFilter()); err != nil {
		m.log.WarnContext(ctx, "list sandboxes for the orphan sweep and the slots", "err", err)
		rep.Errors++
	} else {
		orphans, errs := m.sweepOrphans(ctx, live, now)
		rep.Orphans += orphans
		rep.Errors += errs
		// After the sweep: a slot's sandbox it killed frees the slot at the
		// next tick, when its record no longer names it.
		freed, errs := m.reconcileTenants(ctx, live, now)
		rep.Slots += freed
		rep.Errors += errs
	}
	if err := ctx.Err(); err != nil {
		return rep, ctxError(err, "reaping")
	}
	return rep, nil
}

// parallel runs fn for 0..n-1 with at most ReapParallelism at once, and
// returns when all are done.
func (m *Manager) parallel(ctx context.Context, n int, fn func(context.Context, int)) {
	sem := make(chan struct{}, m.cfg.ReapParallelism)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(ctx, i)
		})
	}
	wg.Wait()
}

// guard runs one session's or sandbox's part of a tick so that a panic in
// it (a bad record, a bug) counts as that one's failure and the tick goes
// on with the others, instead of taking the whole function down.
func (m *Manager) guard(ctx context.Context, what string, fn func() reapOutcome) (out reapOutcome) {
	defer func() {
		if p := recover(); p != nil {
			m.log.ErrorContext(ctx, "reaper: "+what+" panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = reapFailed
		}
	}()
	return fn()
}

// reapOne acts on one due session. The record from the index may be stale:
// a lost conditional write re-reads it and decides again.
func (m *Manager) reapOne(ctx context.Context, s *Session) reapOutcome {
	owner := randomID(16)
	for attempt := 0; attempt < 3; attempt++ {
		out, err := m.reapDecide(ctx, s, owner)
		if !errors.Is(err, errRetry) {
			if err != nil {
				m.log.WarnContext(ctx, "reap session", "session", s.SessionID, "tenant", s.Tenant, "err", err)
				return reapFailed
			}
			return out
		}
		fresh, err := m.store.GetSession(ctx, s.Key)
		if errors.Is(err, ErrNotFound) {
			return reapNothing
		} else if err != nil {
			m.log.WarnContext(ctx, "re-read due session", "session", s.SessionID, "err", err)
			return reapFailed
		}
		s = fresh
	}
	return reapNothing
}

// reapDecide applies the reaper's policy to s as read.
func (m *Manager) reapDecide(ctx context.Context, s *Session, owner string) (reapOutcome, error) {
	now := m.clock.Now()
	switch s.State {
	case StateRunning, StatePaused:
		switch {
		case expiredLifetime(s, now) && s.State == StateRunning && m.inUse(s, now) && m.persists(s):
			return m.reapRecycle(ctx, s, owner)
		case expiredLifetime(s, now):
		case s.State == StateRunning && now.Before(s.IdleDeadline) && m.checkpointIsDue(s, now):
			return m.reapCheckpoint(ctx, s)
		case s.State == StatePaused || now.Before(s.IdleDeadline):
			return reapNothing, nil // not due (any more)
		case s.PauseOnIdle:
			return m.reapPause(ctx, s, owner)
		}
		if _, err := m.stopSession(ctx, s, owner, true); err != nil {
			return reapFailed, err
		}
		return reapKilled, nil
	case StateStopping:
		if leaseHeld(s, now) {
			return reapNothing, nil
		}
		if _, err := m.stopSession(ctx, s, owner, true); err != nil {
			return reapFailed, err
		}
		return reapKilled, nil
	case StatePausing:
		switch {
		case leaseHeld(s, now):
			return reapNothing, nil
		case !expiredLifetime(s, now):
			// A tick died mid-pause: pause again (pausing a paused
			// sandbox is harmless).
			return m.reapPause(ctx, s, owner)
		}
		if _, err := m.stopSession(ctx, s, owner, true); err != nil {
			return reapFailed, err
		}
		return reapKilled, nil
	case StateStarting:
		if leaseHeld(s, now) {
			return reapNothing, nil
		}
		return m.reapStaleStart(ctx, s)
	}
	return reapNothing, nil
}

// reapPause takes the pausing lease, pauses the sandbox, and records it
// paused. User calls wait while the lease holds, so none can resume the
// sandbox (a no-op, as it still runs) and record it running just before
// the pause lands. A pause slower than the lease may still land after a
// user call took over: then the record, read again, shows the sandbox
// running and it is resumed once more.
func (m *Manager) reapPause(ctx context.Context, cur *Session, owner string) (reapOutcome, error) {
	s := *cur
	m.lease(&s, StatePausing, owner, m.clock.Now())
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return reapNothing, errRetry
	} else if err != nil {
		return reapFailed, fmt.Errorf("mark pausing: %w", err)
	}
	// The lease is ours: whatever happens, it must not be left to run out
	// while user calls wait on it.
	dctx, cancel := detach(ctx)
	defer cancel()
	if m.persists(&s) && !m.checkpointDue(&s).IsZero() {
		// A paused sandbox may still be lost at the provider.
		m.saveBefore(dctx, &s, "pause")
	}
	err := m.sandboxes.Pause(ctx, s.SandboxID)
	if errors.Is(err, ErrSandboxGone) {
		// Nothing left to pause: record it stopped.
		if _, err := m.stopSession(dctx, &s, owner, false); err != nil && !errors.Is(err, errRetry) {
			return reapFailed, err
		}
		return reapKilled, nil
	}
	// Paused, or maybe not (the call failed): recorded paused either way,
	// so the next user call resumes it, a no-op if it runs on.
	p := s
	p.State = StatePaused
	p.LeaseOwner, p.LeaseUntil = "", time.Time{}
	setDue(&p)
	if werr := m.store.UpdateSession(dctx, &p); errors.Is(werr, ErrConflict) {
		return m.pauseOvertaken(dctx, &s)
	} else if werr != nil {
		return reapFailed, fmt.Errorf("mark paused: %w", werr)
	}
	if err != nil {
		return reapFailed, fmt.Errorf("pause sandbox %s: %w", s.SandboxID, err)
	}
	return reapPaused, nil
}

// pauseOvertaken handles a pause whose lease was taken while it ran (it
// outlasted the lease, or a Stop came): if a user call has the same
// sandbox recorded running, the pause may have landed after it resumed it,
// so it is resumed again.
func (m *Manager) pauseOvertaken(ctx context.Context, ours *Session) (reapOutcome, error) {
	cur, err := m.store.GetSession(ctx, ours.Key)
	if errors.Is(err, ErrNotFound) {
		return reapNothing, nil
	} else if err != nil {
		return reapFailed, fmt.Errorf("re-read after a pause: %w", err)
	}
	if cur.State != StateRunning || cur.SandboxID != ours.SandboxID {
		return reapNothing, nil
	}
	if _, err := m.sandboxes.Connect(ctx, cur.SandboxID, m.providerTimeout(cur, m.clock.Now())); err != nil {
		return reapFailed, fmt.Errorf("resume sandbox %s after a late pause: %w", cur.SandboxID, err)
	}
	return reapNothing, nil
}

// inUse reports whether s saw activity within its idle timeout: its idle
// deadline, which markActive keeps within the lifetime, would be later
// without that cap.
func (m *Manager) inUse(s *Session, now time.Time) bool {
	return now.Before(s.LastActivityAt.Add(m.idleTimeout(s)))
}

// reapRecycle ends the sandbox of a session in use at its lifetime, before
// the provider's cap ends it unsaved: under the stopping lease (user calls
// wait) it checkpoints the workspace and kills the sandbox, then records
// the session running again with no lifetime deadline. Its next call finds
// the sandbox gone and takes the path of a vanished sandbox: a fresh one,
// the workspace restored, restarted and restored in the answer. Idle, the
// reaper stops it at its idle deadline as any other.
func (m *Manager) reapRecycle(ctx context.Context, cur *Session, owner string) (reapOutcome, error) {
	s := *cur
	m.lease(&s, StateStopping, owner, m.clock.Now())
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return reapNothing, errRetry
	} else if err != nil {
		return reapFailed, fmt.Errorf("mark stopping to recycle: %w", err)
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	snap := s
	wctx, release := m.holdLease(dctx, &s)
	m.saveBefore(wctx, &snap, "recycle")
	if lost := release(); lost != nil {
		return reapNothing, nil // a user call or a stop took over
	}
	saved := !snap.LastCheckpoint.At.Equal(s.LastCheckpoint.At)
	s.LastCheckpoint, s.CheckpointProblem, s.CheckpointTriedAt = snap.LastCheckpoint, snap.CheckpointProblem, snap.CheckpointTriedAt
	if !saved {
		// Nothing saved: killing it would lose the work, so it is stopped
		// as at any lifetime's end (the last checkpoint stays restorable).
		s.State = StateRunning
		if _, err := m.stopSession(dctx, &s, owner, false); err != nil {
			return reapFailed, err
		}
		return reapKilled, nil
	}
	if err := m.sandboxes.Kill(dctx, s.SandboxID); err != nil {
		return reapFailed, fmt.Errorf("kill sandbox %s to recycle: %w", s.SandboxID, err)
	}
	s.State = StateRunning
	s.LeaseOwner, s.LeaseUntil = "", time.Time{}
	s.LifetimeDeadline = time.Time{}
	// The idle deadline was held within the lifetime; it is free again.
	s.IdleDeadline = s.LastActivityAt.Add(m.idleTimeout(&s))
	setDue(&s)
	if err := m.store.UpdateSession(dctx, &s); errors.Is(err, ErrConflict) {
		return reapNothing, nil
	} else if err != nil {
		return reapFailed, fmt.Errorf("mark recycled: %w", err)
	}
	m.log.InfoContext(ctx, "recycled sandbox at its lifetime", "session", s.SessionID, "tenant", s.Tenant, "sandbox", s.SandboxID)
	return reapRecycled, nil
}

// reapStaleStart clears a start whose caller died holding the lease, and
// gives back its slot. A sandbox it may have created unrecorded is left to
// the orphan sweep.
func (m *Manager) reapStaleStart(ctx context.Context, cur *Session) (reapOutcome, error) {
	s := *cur
	s.State = StateError
	s.LeaseOwner, s.LeaseUntil = "", time.Time{}
	s.Slot = ""
	s.ExpiresAt = m.stoppedExpiry(&s, m.clock.Now())
	setDue(&s)
	if err := m.store.UpdateSession(ctx, &s); errors.Is(err, ErrConflict) {
		return reapNothing, errRetry
	} else if err != nil {
		return reapFailed, fmt.Errorf("clear stale start: %w", err)
	}
	if cur.SandboxID != "" {
		// The sandbox being replaced when the start died.
		if err := m.sandboxes.Kill(ctx, cur.SandboxID); err != nil {
			m.giveBackSlot(ctx, cur.Tenant, cur.Slot)
			return reapFailed, fmt.Errorf("kill sandbox %s of a stale start: %w", cur.SandboxID, err)
		}
	}
	m.giveBackSlot(ctx, cur.Tenant, cur.Slot)
	return reapNothing, nil
}

// reapFilter selects the sandboxes a tick looks at: the stack's, or without
// a stack id the tenant's (or every one, with no tenant either).
func (m *Manager) reapFilter() map[string]string {
	switch {
	case m.cfg.StackID != "":
		return map[string]string{MetaStack: m.cfg.StackID}
	case m.cfg.Tenant != "":
		return map[string]string{MetaTenant: m.cfg.Tenant}
	}
	return nil
}

// sweepOrphans kills this stack's sandboxes in list older than the grace
// period that no live session owns (a start that died after creating one, a
// kill that failed, a record deleted). Each is checked against its
// session's record, read afresh. Without a stack id there is no sweep: the
// sandboxes listed may be another deployment's.
func (m *Manager) sweepOrphans(ctx context.Context, list []SandboxInfo, now time.Time) (orphans, errs int) {
	if m.cfg.StackID == "" {
		return 0, 0
	}
	var old []SandboxInfo
	for _, sb := range list {
		grace := m.cfg.OrphanGrace
		if sb.Metadata[MetaOnce] != "" {
			// A one-shot execution's sandbox has no session by design: it
			// is an orphan only once its longest execution is surely over.
			grace = max(grace, m.onceLifetime(maxExecTimeout))
		}
		if !sb.StartedAt.IsZero() && now.Sub(sb.StartedAt) >= grace && len(old) < maxOrphanChecks {
			old = append(old, sb)
		}
	}
	results := make([]reapOutcome, len(old))
	m.parallel(ctx, len(old), func(ctx context.Context, i int) {
		results[i] = m.guard(ctx, "sweep sandbox "+old[i].ID, func() reapOutcome { return m.sweepOne(ctx, old[i]) })
	})
	for _, r := range results {
		switch r {
		case reapKilled:
			orphans++
		case reapFailed:
			errs++
		}
	}
	return orphans, errs
}

func (m *Manager) sweepOne(ctx context.Context, sb SandboxInfo) reapOutcome {
	key := Key{Tenant: sb.Metadata[MetaTenant], Principal: sb.Metadata[MetaPrincipal], SessionID: sb.Metadata[MetaSession]}
	if validateKey(key) == nil {
		s, err := m.store.GetSession(ctx, key)
		switch {
		case err == nil && s.State.Live() && s.SandboxID == sb.ID:
			return reapNothing
		case err != nil && !errors.Is(err, ErrNotFound):
			m.log.WarnContext(ctx, "read owner of sandbox", "sandbox", sb.ID, "err", err)
			return reapFailed
		}
	}
	// The listing may be older than the record just read: a stop that
	// finished in between killed it already. Only a sandbox still there is
	// an orphan.
	if _, err := m.sandboxes.Get(ctx, sb.ID); errors.Is(err, ErrSandboxGone) {
		return reapNothing
	} else if err != nil {
		m.log.WarnContext(ctx, "check orphan sandbox", "sandbox", sb.ID, "err", err)
		return reapFailed
	}
	if err := m.sandboxes.Kill(ctx, sb.ID); err != nil {
		m.log.WarnContext(ctx, "kill orphan sandbox", "sandbox", sb.ID, "err", err)
		return reapFailed
	}
	m.log.InfoContext(ctx, "killed orphan sandbox", "sandbox", sb.ID, "session", key.SessionID, "tenant", key.Tenant)
	return reapKilled
}
