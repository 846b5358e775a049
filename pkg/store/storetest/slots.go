package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func slot(principal, sessionID, token string, clock *testclock.Clock) session.Slot {
	return session.Slot{Token: token, Principal: principal, SessionID: sessionID, TakenAt: clock.Now().UTC()}
}

// heldSessions is the session ids of the tenant's slots, sorted.
func heldSessions(t *testing.T, st session.Store, tenant string) []string {
	t.Helper()
	slots, err := st.TenantSlots(t.Context(), tenant)
	if err != nil {
		t.Fatalf("TenantSlots(%s): %v", tenant, err)
	}
	var ids []string
	for _, s := range slots {
		ids = append(ids, s.SessionID)
	}
	slices.Sort(ids)
	return ids
}

func wantFull(t *testing.T, what string, err error, live, mine int) {
	t.Helper()
	full, ok := errors.AsType[*session.SlotsFullError](err)
	if !ok || full.Live != live || full.Mine != mine {
		t.Fatalf("%s: got %v, want SlotsFullError{Live: %d, Mine: %d}", what, err, live, mine)
	}
}

func testSlots(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	limits := session.SlotLimits{Tenant: 3, Principal: 2}
	take := func(s session.Slot, l session.SlotLimits) error {
		_, err := st.TakeSlot(ctx, "acme", s, l)
		return err
	}
	if got := heldSessions(t, st, "acme"); len(got) != 0 {
		t.Fatalf("a new tenant holds %v", got)
	}
	// Releasing what was never taken, before the tenant has any slot.
	if err := st.ReleaseSlot(ctx, "acme", slot("alice", "s0", "t0", clock)); err != nil {
		t.Fatalf("release of a slot never taken: %v", err)
	}
	a1, a2, a3 := slot("alice", "s1", "t1", clock), slot("alice", "s2", "t2", clock), slot("alice", "s3", "t3", clock)
	for i, s := range []session.Slot{a1, a1, a2, a3} { // a1 twice: a no-op
		counts, err := st.TakeSlot(ctx, "acme", s, limits)
		if want := max(i, 1); err != nil || counts != (session.SlotCounts{Live: want, Mine: want}) {
			t.Fatalf("take %s (alone, up to the tenant's cap): %+v, %v; want %d and %d", s.SessionID, counts, err, want, want)
		}
	}
	if got := heldSessions(t, st, "acme"); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Fatalf("held %v", got)
	}
	wantFull(t, "past the tenant's cap", take(slot("alice", "s4", "t4", clock), limits), 3, 3)
	wantFull(t, "another principal past the tenant's cap", take(slot("bob", "b1", "tb1", clock), limits), 3, 0)
	// Another tenant's cap is its own.
	if _, err := st.TakeSlot(ctx, "globex", slot("alice", "s1", "t1", clock), limits); err != nil {
		t.Fatalf("another tenant: %v", err)
	}
	for _, s := range []session.Slot{a3, a3} { // twice: the second is a no-op
		if err := st.ReleaseSlot(ctx, "acme", s); err != nil {
			t.Fatalf("release %s: %v", s.SessionID, err)
		}
	}
	// A slot of the same session under another token is another slot.
	if err := st.ReleaseSlot(ctx, "acme", slot("alice", "s2", "other", clock)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeSlot(ctx, "acme", slot("bob", "b1", "tb1", clock), limits); err != nil {
		t.Fatalf("bob beside alice: %v", err)
	}
	// alice holds 2, bob 1: tenant full either way; free one of alice's,
	// and alice is at her share beside bob while bob may still take one.
	if err := st.ReleaseSlot(ctx, "acme", a2); err != nil {
		t.Fatal(err)
	}
	wantFull(t, "alice past her share beside bob", take(slot("alice", "s5", "t5", clock), session.SlotLimits{Tenant: 3, Principal: 1}), 2, 1)
	if counts, err := st.TakeSlot(ctx, "acme", slot("bob", "b2", "tb2", clock), limits); err != nil || counts != (session.SlotCounts{Live: 3, Mine: 2}) {
		t.Fatalf("bob within his share: %+v, %v; want 3 and 2", counts, err)
	}
	if got := heldSessions(t, st, "acme"); !slices.Equal(got, []string{"b1", "b2", "s1"}) {
		t.Fatalf("held %v", got)
	}
	slots, _ := st.TenantSlots(ctx, "acme")
	for _, s := range slots {
		if s.SessionID == "s1" && s != a1 {
			t.Fatalf("slot read back as %+v, want %+v", s, a1)
		}
	}
}

// testSlotsUnderBurst: of 30 concurrent takes on a cap of 5, exactly 5 get
// a slot; once they are given back, the next 5 do.
func testSlotsUnderBurst(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	limits := session.SlotLimits{Tenant: 5, Principal: 3}
	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = st.TakeSlot(ctx, "acme", slot("alice", fmt.Sprint("s", i), fmt.Sprint("t", i), clock), limits)
		})
	}
	wg.Wait()
	took := 0
	for i, err := range errs {
		if err == nil {
			took++
		} else if _, ok := errors.AsType[*session.SlotsFullError](err); !ok {
			t.Fatalf("take %d: %v, want success or SlotsFullError", i, err)
		}
	}
	if held := heldSessions(t, st, "acme"); took != 5 || len(held) != 5 {
		t.Fatalf("%d takes succeeded, %d slots held; want 5 and 5", took, len(held))
	}
	slots, _ := st.TenantSlots(ctx, "acme")
	for _, s := range slots {
		if err := st.ReleaseSlot(ctx, "acme", s); err != nil {
			t.Fatal(err)
		}
	}
	if held := heldSessions(t, st, "acme"); len(held) != 0 {
		t.Fatalf("held after giving back: %v", held)
	}
	for i := range 5 {
		if _, err := st.TakeSlot(ctx, "acme", slot("bob", fmt.Sprint("b", i), fmt.Sprint("tb", i), clock), limits); err != nil {
			t.Fatalf("take %d after giving back: %v", i, err)
		}
	}
}
