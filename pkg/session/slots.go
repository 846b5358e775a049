package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The tenant cap is kept in the store, not counted at the provider: a
// start takes a slot (a conditional write that fails once the tenant holds
// MaxLiveSandboxesPerTenant slots, or the principal its share while others
// hold slots) after it won the session's start lease and before it creates
// the sandbox, and the slot is given back once the sandbox is gone. The
// session's record names its slot from the lease write on, so whoever moves
// the record to a state without a sandbox (stopped, error) gives back the
// slot the record named, and only after that write succeeded: a caller that
// lost the record never frees a slot someone else now relies on. A slot
// that leaks anyway (a process died between the two writes) is freed by
// the reaper, which checks the slots against the provider's List every
// tick (reconcileSlots).

// Slot is one of a tenant's live-sandbox places, held by a session (or a
// one-shot execution) from before its sandbox is created until it is gone.
type Slot struct {
	// Token is random per start, so a slot given back late never frees the
	// one a later start of the same session took.
	Token     string
	Principal string
	// SessionID is empty for a one-shot execution.
	SessionID string
	// TakenAt is when the start took it, in whole seconds.
	TakenAt time.Time
}

// String is the slot as stored; ParseSlot reads it back. Principals and
// session ids never hold '#' (validateName, sessionIDRE).
func (s Slot) String() string {
	return strings.Join([]string{s.Token, strconv.FormatInt(s.TakenAt.Unix(), 10), s.Principal, s.SessionID}, "#")
}

// ParseSlot reads a slot written by Slot.String.
func ParseSlot(v string) (Slot, error) {
	parts := strings.SplitN(v, "#", 4)
	if len(parts) != 4 || parts[0] == "" || parts[2] == "" {
		return Slot{}, fmt.Errorf("malformed slot %q", v)
	}
	secs, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return Slot{}, fmt.Errorf("malformed slot %q: %w", v, err)
	}
	return Slot{Token: parts[0], TakenAt: time.Unix(secs, 0).UTC(), Principal: parts[2], SessionID: parts[3]}, nil
}

// SlotLimits are the caps a TakeSlot enforces.
type SlotLimits struct {
	// Tenant is the most slots the tenant may hold.
	Tenant int
	// Principal is the most one principal may hold while another principal
	// holds any; a principal alone may hold up to Tenant.
	Principal int
}

// SlotCounts are the slots a tenant holds and the principal's among them.
type SlotCounts struct {
	Live, Mine int
}

// SlotsFullError is TakeSlot's refusal, with the counts that refused it.
type SlotsFullError SlotCounts

func (e *SlotsFullError) Error() string {
	return fmt.Sprintf("no free slot: the tenant holds %d, the principal %d", e.Live, e.Mine)
}

// MaxSlotsPerTenant bounds MaxLiveSandboxesPerTenant: a tenant's slots are
// kept in one record, which must stay within the store's item size.
const MaxSlotsPerTenant = 500

// newSlot is a fresh slot for a start of key.
func (m *Manager) newSlot(principal, sessionID string) Slot {
	return Slot{Token: randomID(12), Principal: principal, SessionID: sessionID,
		TakenAt: m.clock.Now().Truncate(time.Second).UTC()}
}

// takeSlot takes the slot of a start, or answers the cap's ErrLimit, and
// notes the counts it learned.
func (m *Manager) takeSlot(ctx context.Context, tenant string, slot Slot) error {
	counts, err := m.store.TakeSlot(ctx, tenant, slot, SlotLimits{Tenant: m.cfg.MaxLiveSandboxesPerTenant, Principal: m.cfg.MaxLiveSandboxesPerPrincipal})
	if err == nil {
		m.caps.learn(tenant, slot.Principal, counts)
	}
	if full, ok := errors.AsType[*SlotsFullError](err); ok {
		m.caps.learn(tenant, slot.Principal, SlotCounts(*full))
		if full.Live >= m.cfg.MaxLiveSandboxesPerTenant {
			return m.tenantCapError(full.Live)
		}
		return m.principalCapError(full.Mine)
	}
	if err != nil {
		return fmt.Errorf("take a slot of the tenant's cap: %w", err)
	}
	return nil
}

// giveBackSlot releases the slot a record named (v, as stored; empty for
// none) on a context of its own: a slot left held blocks a start until the
// reaper's next tick.
func (m *Manager) giveBackSlot(ctx context.Context, tenant, v string) {
	if v == "" {
		return
	}
	slot, err := ParseSlot(v)
	if err != nil {
		m.log.ErrorContext(ctx, "give back slot", "tenant", tenant, "err", err)
		return
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	if err := m.store.ReleaseSlot(dctx, tenant, slot); err != nil {
		m.log.WarnContext(ctx, "give back slot; the reaper will", "tenant", tenant, "session", slot.SessionID, "err", err)
	}
}

// dropLostSlot gives back the slot of a start that lost its record to
// another caller (a stop, a takeover), unless the record still names it:
// whoever holds the record gives back what it names, and nobody else would
// give back ours.
func (m *Manager) dropLostSlot(ctx context.Context, s *Session) {
	if s.Slot == "" {
		return
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	cur, err := m.store.GetSession(dctx, s.Key)
	if err == nil && cur.Slot == s.Slot {
		return
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		m.log.WarnContext(ctx, "re-read session after a lost start; the reaper will free its slot", "session", s.SessionID, "err", err)
		return
	}
	m.giveBackSlot(ctx, s.Tenant, s.Slot)
}

// reconcileSlots frees the tenant's slots that hold no sandbox: taken more
// than a lease ago (a start creates its sandbox within its lease), no
// sandbox of their session in live (the provider's List), and their
// session not relying on them (slotInUse). A
// one-shot execution's slot is freed once its sandbox is surely dead.
func (m *Manager) reconcileSlots(ctx context.Context, tenant string, slots []Slot, live []SandboxInfo, now time.Time) (freed, errs int) {
	owners := map[[2]string]bool{}
	for _, sb := range live {
		if sb.Metadata[MetaTenant] == tenant {
			owners[[2]string{sb.Metadata[MetaPrincipal], sb.Metadata[MetaSession]}] = true
		}
	}
	for _, slot := range slots {
		if now.Sub(slot.TakenAt) < m.cfg.LeaseDuration+time.Second {
			continue
		}
		if slot.SessionID == "" {
			// A one-shot execution: its sandbox carries no session, and
			// it gives its slot back when it ends.
			if now.Sub(slot.TakenAt) < m.onceLifetime(maxExecTimeout) {
				continue
			}
		} else if owners[[2]string{slot.Principal, slot.SessionID}] || m.slotInUse(ctx, tenant, slot, now, &errs) {
			continue
		}
		if err := m.store.ReleaseSlot(ctx, tenant, slot); err != nil {
			m.log.WarnContext(ctx, "free leaked slot", "tenant", tenant, "session", slot.SessionID, "err", err)
			errs++
			continue
		}
		m.log.InfoContext(ctx, "freed leaked slot", "tenant", tenant, "principal", slot.Principal, "session", slot.SessionID)
		freed++
	}
	return freed, errs
}

// slotInUse reports whether the slot's session still relies on it: its
// record names the slot and is a start under its lease (the sandbox may not
// exist yet) or has a sandbox the provider still has (the listing may be
// older than the record). A failed read keeps the slot.
func (m *Manager) slotInUse(ctx context.Context, tenant string, slot Slot, now time.Time, errs *int) bool {
	s, err := m.store.GetSession(ctx, Key{Tenant: tenant, Principal: slot.Principal, SessionID: slot.SessionID})
	switch {
	case errors.Is(err, ErrNotFound):
		return false
	case err != nil:
		m.log.WarnContext(ctx, "read session of a slot", "session", slot.SessionID, "err", err)
		*errs++
		return true
	case s.Slot != slot.String() || !s.State.Live():
		return false
	case s.State == StateStarting && leaseHeld(s, now):
		return true
	case s.SandboxID == "":
		return false
	}
	_, err = m.sandboxes.Get(ctx, s.SandboxID)
	if err != nil && !errors.Is(err, ErrSandboxGone) {
		m.log.WarnContext(ctx, "check sandbox of a slot", "sandbox", s.SandboxID, "err", err)
		*errs++
	}
	return !errors.Is(err, ErrSandboxGone)
}

// reconcileTenants reconciles the slots of the deployment's tenant and of
// every tenant with a sandbox in live.
func (m *Manager) reconcileTenants(ctx context.Context, live []SandboxInfo, now time.Time) (freed, errs int) {
	tenants := map[string]bool{}
	if m.cfg.Tenant != "" {
		tenants[m.cfg.Tenant] = true
	}
	for _, sb := range live {
		if t := sb.Metadata[MetaTenant]; t != "" {
			tenants[t] = true
		}
	}
	for tenant := range tenants {
		slots, err := m.store.TenantSlots(ctx, tenant)
		if err != nil {
			m.log.WarnContext(ctx, "read the tenant's slots", "tenant", tenant, "err", err)
			errs++
			continue
		}
		f, e := m.reconcileSlots(ctx, tenant, slots, live, now)
		freed += f
		errs += e + m.adoptUnslotted(ctx, tenant, slots, live)
	}
	return freed, errs
}

// adoptUnslotted gives a slot to each sandbox in live whose session's
// record is running or paused with it but names no slot: one started
// before the cap moved into the table. The slot is taken whatever the cap
// (the sandbox exists), then named in the record; a record that changed
// meanwhile gets its slot back. Sessions with a slot cost nothing here.
func (m *Manager) adoptUnslotted(ctx context.Context, tenant string, slots []Slot, live []SandboxInfo) (errs int) {
	held := map[[2]string]bool{}
	for _, s := range slots {
		held[[2]string{s.Principal, s.SessionID}] = true
	}
	for _, sb := range live {
		key := Key{Tenant: tenant, Principal: sb.Metadata[MetaPrincipal], SessionID: sb.Metadata[MetaSession]}
		if sb.Metadata[MetaTenant] != tenant || sb.Metadata[MetaOnce] != "" || held[[2]string{key.Principal, key.SessionID}] || validateKey(key) != nil {
			continue
		}
		s, err := m.store.GetSession(ctx, key)
		if errors.Is(err, ErrNotFound) {
			continue // an orphan: the sweep's
		} else if err != nil {
			m.log.WarnContext(ctx, "read session of an unslotted sandbox", "sandbox", sb.ID, "err", err)
			errs++
			continue
		}
		if s.Slot != "" || s.SandboxID != sb.ID || s.State != StateRunning && s.State != StatePaused {
			continue
		}
		slot := m.newSlot(key.Principal, key.SessionID)
		if _, err := m.store.TakeSlot(ctx, tenant, slot, SlotLimits{Tenant: MaxSlotsPerTenant, Principal: MaxSlotsPerTenant}); err != nil {
			m.log.WarnContext(ctx, "adopt an unslotted sandbox", "sandbox", sb.ID, "err", err)
			errs++
			continue
		}
		s.Slot = slot.String()
		if err := m.store.UpdateSession(ctx, s); err != nil {
			// Changed meanwhile (or the write failed): the record does not
			// name the slot, so nobody else gives it back.
			m.giveBackSlot(ctx, tenant, slot.String())
			if !errors.Is(err, ErrConflict) {
				errs++
			}
			continue
		}
		m.log.InfoContext(ctx, "gave an unslotted sandbox a slot", "sandbox", sb.ID, "session", key.SessionID)
	}
	return errs
}
