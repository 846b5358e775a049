package session

import "time"

// The state machine. Every arrow is a conditional write on Version made
// before the provider call it announces, so a racing caller either loses the
// write (re-reads, decides again) or finds the session already moved on.
//
//	(none), stopped, error,       --start lease-->  starting --Create ok--> running
//	expired or gone sandbox,                        starting --Create fails--> error
//	expired start lease                             starting --tenant cap--> stopped
//	running --idle, PauseOnIdle, lifetime left (reaper)--> pausing --Pause--> paused --Connect--> running
//	pausing with an expired lease --user call: Connect--> running, --reaper--> pausing again
//	running, paused, starting --Stop, idle or lifetime (reaper)--> stopping --Kill--> stopped
//	stopping with an expired lease --reaper--> Kill again --> stopped
//	starting with an expired lease --reaper--> error (its sandbox, if any, to the orphan sweep)
//
// A lease (LeaseOwner, random per call, and LeaseUntil) guards starting,
// pausing and stopping: others wait while it holds and may take over once
// it expires. The pausing lease keeps user calls off a sandbox whose pause
// is under way, which would otherwise land after a call had resumed it.
// DueAt (setDue) tells the reaper when to look next. Slot names the slot of
// the tenant's cap a start took (slots.go): it is written with the start
// lease, taken before Create, and given back by whoever writes the record
// to stopped or error.

// idleTimeout is the session's own idle timeout or the configured one.
func (m *Manager) idleTimeout(s *Session) time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return m.cfg.IdleTimeout
}

// markActive records activity at now: the idle deadline moves, never past
// the lifetime deadline, and the reaper's due time follows.
func (m *Manager) markActive(s *Session, now time.Time) {
	s.LastActivityAt = now
	s.IdleDeadline = now.Add(m.idleTimeout(s))
	if !s.LifetimeDeadline.IsZero() && s.IdleDeadline.After(s.LifetimeDeadline) {
		s.IdleDeadline = s.LifetimeDeadline
	}
	m.setDue(s)
}

// setDue sets when the reaper must next look at the session, from its state:
// a running one at its nearest deadline, a paused one at the end of its
// lifetime, one held by a lease when the lease runs out, and never a
// session that owns no sandbox.
func setDue(s *Session) {
	switch s.State {
	case StateRunning:
		s.DueAt = earliest(s.IdleDeadline, s.LifetimeDeadline)
	case StatePaused:
		s.DueAt = s.LifetimeDeadline
	case StateStarting, StatePausing, StateStopping:
		s.DueAt = s.LeaseUntil
	default:
		s.DueAt = time.Time{}
	}
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero(), a.Before(b):
		return a
	}
	return b
}

// providerTimeout is the timeout to give the provider for s at now: a
// little past the idle deadline, never far past the lifetime, and never
// past the provider's cap (E2B answers 400 beyond it).
func (m *Manager) providerTimeout(s *Session, now time.Time) time.Duration {
	d := m.idleTimeout(s)
	if !s.LifetimeDeadline.IsZero() {
		if left := s.LifetimeDeadline.Sub(now); left < d {
			d = max(left, 0)
		}
	}
	return min(d+m.cfg.ProviderTimeoutSlack, m.cfg.MaxSandboxLifetime)
}

// sandboxLifetime is how long a sandbox lives in our records: Lifetime,
// ended early enough before the provider's cap for the reaper (which runs
// on a schedule) to checkpoint and recycle it before the provider ends it.
func (m *Manager) sandboxLifetime() time.Duration {
	margin := min(m.cfg.ProviderTimeoutSlack, m.cfg.MaxSandboxLifetime/10)
	return min(m.cfg.Lifetime, m.cfg.MaxSandboxLifetime-margin)
}

// leaseHeld reports whether someone holds an unexpired lease on s at now.
func leaseHeld(s *Session, now time.Time) bool {
	switch s.State {
	case StateStarting, StatePausing, StateStopping:
		return now.Before(s.LeaseUntil)
	}
	return false
}

// expiredLifetime reports whether the sandbox of s has outlived its lifetime.
func expiredLifetime(s *Session, now time.Time) bool {
	return !s.LifetimeDeadline.IsZero() && !now.Before(s.LifetimeDeadline)
}

// view is the session as a reader should see it at now. The reaper acts late
// (it runs on a schedule) and the store's TTL later still (hours), so reads
// apply the deadlines themselves: a running session past its idle deadline
// shows as what the reaper will make of it. ok is false when the record is
// past its retention and only awaits deletion.
func (m *Manager) view(s *Session, now time.Time) (out *Session, ok bool) {
	if !s.State.Live() && !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt) {
		return nil, false
	}
	v := *s
	switch {
	case v.State == StateRunning || v.State == StatePausing || v.State == StatePaused:
		if expiredLifetime(&v, now) {
			v.State = StateStopped
		} else if v.State == StatePausing {
			v.State = StatePaused // what it is about to be; readers know no pausing
		} else if v.State == StateRunning && !v.IdleDeadline.IsZero() && !now.Before(v.IdleDeadline) {
			v.State = StateStopped
			if v.PauseOnIdle {
				v.State = StatePaused
			}
		}
	case v.State == StateStarting && !leaseHeld(&v, now):
		v.State = StateError
	}
	return &v, true
}
