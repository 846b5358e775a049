package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestKeyBudgetSharedAcrossTenants: the key's running sandboxes count
// whoever started them (another tenant, another deployment, paused ones
// not), and a start past the budget is refused before anything is created,
// its session left stopped and its slot given back.
func TestKeyBudgetSharedAcrossTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxSandboxesPerKey: 3})
	// Two sandboxes of another deployment on the same key, one paused.
	now := r.clock.Now()
	r.sbx.add(SandboxInfo{ID: "other-1", State: StateRunning, StartedAt: now, Metadata: map[string]string{MetaStack: "elsewhere", MetaTenant: "acme"}})
	r.sbx.add(SandboxInfo{ID: "other-2", State: StatePaused, StartedAt: now, Metadata: map[string]string{MetaStack: "elsewhere", MetaTenant: "beta"}})
	for i := range 2 {
		k := testKey
		k.SessionID = fmt.Sprint("s", i)
		r.mustStart(t, ctx, k, StartOptions{})
	}
	k := testKey
	k.SessionID = "one-too-many"
	_, err := r.m.Start(ctx, k, StartOptions{})
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrLimit || e.RetryAfter != 30*time.Second {
		t.Fatalf("start past the key's budget: %v", err)
	}
	if s := r.store.session(k); s.State != StateStopped || s.Slot != "" || r.sbx.count("Create") != 2 || r.store.heldSlots("acme") != 2 {
		t.Fatalf("refused start left %+v, %d creates, %d slots", s, r.sbx.count("Create"), r.store.heldSlots("acme"))
	}
	if _, err := r.m.ExecuteOnce(ctx, testKey.Tenant, testKey.Principal, OnceRequest{Code: "1"}, nil); !errors.Is(err, ErrLimit) {
		t.Fatalf("a one-shot run past the key's budget: %v", err)
	}
	if n := r.store.heldSlots("acme"); n != 2 {
		t.Fatalf("%d slots held after a refused one-shot run", n)
	}
}

// TestReapSurvivesAPanickingSession: one session whose handling panics is
// counted as a failure and the tick goes on with the others.
func TestReapSurvivesAPanickingSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{})
	var bad string
	for i := range 4 {
		k := testKey
		k.SessionID = fmt.Sprint("s", i)
		s := r.mustStart(t, ctx, k, StartOptions{})
		if i == 2 {
			bad = s.SandboxID
		}
	}
	r.clock.Advance(31 * time.Minute)
	r.sbx.mu.Lock()
	r.sbx.fail = func(op, id string) error {
		if op == "Kill" && id == bad {
			panic("injected: a provider adapter bug")
		}
		return nil
	}
	r.sbx.mu.Unlock()
	rep, err := r.m.Reap(ctx)
	if err != nil || rep.Killed != 3 || rep.Errors != 1 {
		t.Fatalf("tick with one panicking session: %+v %v", rep, err)
	}
}
