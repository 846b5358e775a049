package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A start takes its slot of the tenant's cap and creates its sandbox. Taken
// one after the other, the slot's write (~3–10 ms on DynamoDB) adds to
// every start; taken at once, a start refused by the cap has created a
// sandbox for nothing, which it kills. So a start overlaps them only when
// this process last saw the tenant's slots (and the principal's) less than
// half used, counting the overlapped starts it has in flight: far from the
// cap, a refusal is unlikely, and near it (or knowing nothing, as after a
// cold start) starts take their slot first. The cap itself stays exact
// either way: it is the slot's conditional write that decides, and a
// refused start's sandbox is killed before the start answers. Other
// processes' starts make the view stale; the half-used margin absorbs them.

// capView is what this process last learned of its tenants' slots.
type capView struct {
	mu       sync.Mutex
	counts   map[[2]string]SlotCounts // (tenant, principal) → counts at its last take
	inflight map[string]int           // tenant → overlapped starts in progress
}

// learn notes the counts a take of principal's slot returned.
func (v *capView) learn(tenant, principal string, c SlotCounts) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.counts == nil {
		v.counts = map[[2]string]SlotCounts{}
	}
	v.counts[[2]string{tenant, principal}] = c
}

// overlap reports whether a start of principal may create its sandbox
// while its slot is being taken, and if so counts it in flight until done.
func (v *capView) overlap(tenant, principal string, cfg Config) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.counts[[2]string{tenant, principal}]
	n := v.inflight[tenant] + 1
	if !ok || 2*(c.Live+n) > cfg.MaxLiveSandboxesPerTenant || 2*(c.Mine+n) > cfg.MaxLiveSandboxesPerPrincipal {
		return false
	}
	if v.inflight == nil {
		v.inflight = map[string]int{}
	}
	v.inflight[tenant] = n
	return true
}

// done ends an overlapped start of the tenant.
func (v *capView) done(tenant string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.inflight[tenant]--; v.inflight[tenant] <= 0 {
		delete(v.inflight, tenant)
	}
}

// sandboxSpec is what the sandbox of s is created with.
func (m *Manager) sandboxSpec(s *Session, opts *StartOptions) SandboxSpec {
	spec := SandboxSpec{
		Template:  s.Template,
		Timeout:   m.cfg.IdleTimeout + m.cfg.ProviderTimeoutSlack,
		Metadata:  m.sandboxMetadata(s),
		AutoPause: s.PauseOnIdle,

		AllowInternetAccess: m.cfg.AllowInternetAccess,
	}
	if s.IdleTimeout > 0 {
		spec.Timeout = s.IdleTimeout + m.cfg.ProviderTimeoutSlack
	}
	// As providerTimeout: never past the sandbox's lifetime nor the
	// provider's cap (E2B refuses a longer create with 400).
	spec.Timeout = min(spec.Timeout, m.sandboxLifetime()+m.cfg.ProviderTimeoutSlack, m.cfg.MaxSandboxLifetime)
	if opts != nil {
		spec.Envs = opts.Envs
	}
	return spec
}

// createInSlot takes the start's slot and creates its sandbox, at once when
// the cap is far from full (see above), else one after the other, then has
// prepare bring the sandbox's workspace in, holding the start's lease on *s
// all along (holdLease): a create or restore that outlives the lease (a
// slow provider, a loaded host, a large workspace) would otherwise let a
// waiting call take the start over and start a second sandbox, whose
// restore reads the workspace again. On any failure the session is
// released (stopped when the cap refused, error when the create or prepare
// failed), the slot given back and a created sandbox killed; a lease lost
// meanwhile is errRetry.
func (m *Manager) createInSlot(ctx context.Context, s *Session, spec SandboxSpec, slot Slot, prepare func(ctx context.Context, id string) error) (SandboxInfo, error) {
	tenant, principal := s.Tenant, s.Principal
	hctx, releaseLease := m.holdLease(ctx, s)
	info, slotErr, createErr := m.takeSlotAndCreate(hctx, tenant, principal, spec, slot)
	var prepErr error
	if slotErr == nil && createErr == nil {
		prepErr = prepare(hctx, info.ID)
	}
	// The renewals have stopped: *s is ours again, at its latest version.
	lost := releaseLease()
	if (lost != nil || slotErr != nil || prepErr != nil) && createErr == nil && info.ID != "" {
		dctx, cancel := detach(ctx)
		defer cancel()
		if kerr := m.sandboxes.Kill(dctx, info.ID); kerr != nil {
			m.log.WarnContext(ctx, "kill sandbox of a start that failed", "sandbox", info.ID, "err", kerr)
		}
	}
	switch {
	case lost != nil:
		if errors.Is(slotErr, ErrLimit) {
			s.Slot = ""
		}
		m.dropLostSlot(ctx, s)
		return SandboxInfo{}, lost
	case slotErr != nil:
		m.slotRefused(ctx, s, slotErr)
		return SandboxInfo{}, slotErr
	case createErr != nil:
		m.release(ctx, s, stateAfter(createErr))
		return SandboxInfo{}, fmt.Errorf("start sandbox for session %q: %w", s.SessionID, createErr)
	case prepErr != nil:
		m.release(ctx, s, StateError)
		return SandboxInfo{}, prepErr
	}
	return info, nil
}

// takeSlotAndCreate takes the slot and creates the sandbox, overlapped or
// in turn, and writes no session record: createInSlot settles the record
// once the lease is no longer being renewed. Taken in turn, a refused slot
// creates nothing.
func (m *Manager) takeSlotAndCreate(ctx context.Context, tenant, principal string, spec SandboxSpec, slot Slot) (info SandboxInfo, slotErr, createErr error) {
	if !m.caps.overlap(tenant, principal, m.cfg) {
		if err := m.takeSlot(ctx, tenant, slot); err != nil {
			return SandboxInfo{}, err, nil
		}
		info, err := m.createOnKey(ctx, spec)
		return info, nil, err
	}
	defer m.caps.done(tenant)
	took := make(chan error, 1)
	go func() { took <- m.takeSlot(ctx, tenant, slot) }()
	info, createErr = m.createOnKey(ctx, spec)
	return info, <-took, createErr
}

// stateAfter is the state a failed create leaves: stopped when a budget
// refused it (nothing failed; the caller may try later), error otherwise.
func stateAfter(err error) State {
	if errors.Is(err, ErrLimit) {
		return StateStopped
	}
	return StateError
}

// slotRefused releases a start whose slot could not be taken: refused by
// the cap, it holds none; failed otherwise, it may, and gives it back.
func (m *Manager) slotRefused(ctx context.Context, s *Session, err error) {
	if errors.Is(err, ErrLimit) {
		s.Slot = ""
		if neverStarted(s) {
			m.forget(ctx, s)
			return
		}
	}
	m.release(ctx, s, StateStopped)
}

// neverStarted reports whether s is the record this start created (its
// first version) for a session that never had a sandbox.
func neverStarted(s *Session) bool {
	return s.Version == 1 && s.SandboxID == "" && s.SandboxStartedAt.IsZero() && s.LastCheckpoint.At.IsZero()
}

// forget ends the record of a new session whose first start was refused:
// a 429 leaves no "stopped" session behind, and the record, expired at
// once, is replaced by the next create.
func (m *Manager) forget(ctx context.Context, s *Session) {
	dctx, cancel := detach(ctx)
	defer cancel()
	r := *s
	r.State = StateStopped
	r.LeaseOwner, r.LeaseUntil = "", time.Time{}
	// Past, by more than the store's whole-second comparison, so a
	// retry in the same second may create it again.
	r.ExpiresAt = m.clock.Now().Add(-2 * time.Second)
	setDue(&r)
	if err := m.store.UpdateSession(dctx, &r); err != nil && !errors.Is(err, ErrConflict) {
		m.log.WarnContext(ctx, "forget a session whose first start was refused", "session", s.SessionID, "err", err)
	}
}
