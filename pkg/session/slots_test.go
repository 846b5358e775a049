package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestSlotRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []Slot{
		{Token: "abc", Principal: "alice@example.com", SessionID: "chat-1", TakenAt: time.Unix(1700000000, 0).UTC()},
		{Token: "abc", Principal: "bob smith", TakenAt: time.Unix(1, 0).UTC()}, // a one-shot execution's
	} {
		got, err := ParseSlot(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSlot(%q) = %+v, %v; want %+v", s.String(), got, err, s)
		}
	}
	for _, bad := range []string{"", "tok", "tok#x#alice#s", "#1#alice#s", "tok#1##s"} {
		if _, err := ParseSlot(bad); err == nil {
			t.Errorf("ParseSlot(%q) accepted", bad)
		}
	}
}

// TestSlotGivenBackOnEveryEnd: every way a session's sandbox ends gives its
// slot of the tenant's cap back, and no way leaves two.
func TestSlotGivenBackOnEveryEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exec := func(r *rig) error {
		_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
		return err
	}
	tests := []struct {
		name string
		// end ends the running session's sandbox somehow.
		end       func(t *testing.T, r *rig)
		wantSlots int
		// recordKeeps: the record still names the freed slot (it says
		// running until a call or the idle deadline finds the sandbox gone;
		// giving it back again then is a no-op).
		recordKeeps bool
	}{
		{"stop", func(t *testing.T, r *rig) {
			if _, err := r.m.Stop(ctx, testKey); err != nil {
				t.Fatal(err)
			}
		}, 0, false},
		{"delete", func(t *testing.T, r *rig) {
			if err := r.m.Delete(ctx, testKey); err != nil {
				t.Fatal(err)
			}
		}, 0, false},
		{"reaper idle kill", func(t *testing.T, r *rig) {
			r.clock.Advance(31 * time.Minute)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Killed != 1 {
				t.Fatalf("reap %+v %v", rep, err)
			}
		}, 0, false},
		{"reaper lifetime kill of a paused sandbox", func(t *testing.T, r *rig) {
			s := r.store.session(testKey)
			s.PauseOnIdle = true
			r.store.put(s)
			r.clock.Advance(31 * time.Minute)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Paused != 1 {
				t.Fatalf("reap %+v %v", rep, err)
			}
			if n := r.store.heldSlots("acme"); n != 1 {
				t.Fatalf("a paused sandbox holds %d slots, want 1", n)
			}
			r.clock.Advance(2 * time.Hour)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Killed != 1 {
				t.Fatalf("reap %+v %v", rep, err)
			}
		}, 0, false},
		{"pause finds the sandbox gone", func(t *testing.T, r *rig) {
			s := r.store.session(testKey)
			s.PauseOnIdle = true
			r.store.put(s)
			r.sbx.vanish(s.SandboxID)
			r.clock.Advance(31 * time.Minute)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Killed != 1 {
				t.Fatalf("reap %+v %v", rep, err)
			}
		}, 0, false},
		{"provider timeout, then a call replaces it", func(t *testing.T, r *rig) {
			r.sbx.vanish(r.store.session(testKey).SandboxID)
			if err := exec(r); err != nil {
				t.Fatal(err)
			}
		}, 1, false},
		{"provider timeout, then the reaper's tick", func(t *testing.T, r *rig) {
			r.sbx.vanish(r.store.session(testKey).SandboxID)
			r.clock.Advance(2 * time.Minute)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Slots != 1 {
				t.Fatalf("reap %+v %v, want one slot freed", rep, err)
			}
		}, 0, true},
		{"lifetime over, a call replaces it", func(t *testing.T, r *rig) {
			for range 5 {
				r.clock.Advance(29 * time.Minute)
				if err := exec(r); err != nil {
					t.Fatal(err)
				}
			}
		}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			if err := exec(r); err != nil {
				t.Fatal(err)
			}
			if n := r.store.heldSlots("acme"); n != 1 {
				t.Fatalf("a running session holds %d slots, want 1", n)
			}
			tt.end(t, r)
			if n := r.store.heldSlots("acme"); n != tt.wantSlots || len(r.sbx.live()) != tt.wantSlots {
				t.Fatalf("%d slots held, live %v; want %d of each", n, r.sbx.live(), tt.wantSlots)
			}
			if s := r.store.session(testKey); (s.Slot == "") != (tt.wantSlots == 0 && !tt.recordKeeps) {
				t.Fatalf("record names slot %q", s.Slot)
			}
		})
	}
}

// TestSlotGivenBackWhenStartFails: a start that fails after taking its slot
// (the provider's create, the write recording the sandbox) gives it back.
func TestSlotGivenBackWhenStartFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		fault func(r *rig)
	}{
		{"failed create", func(r *rig) {
			r.sbx.fail = func(op, _ string) error {
				if op == "Create" {
					return &Error{Kind: ErrUnavailable, Detail: "e2b: 503"}
				}
				return nil
			}
		}},
		{"failed record of the sandbox", func(r *rig) {
			r.store.fail = func(op string) error {
				if op == "UpdateSession" {
					return errors.New("dynamodb: 500 internal error")
				}
				return nil
			}
		}},
	}
	for _, tt := range tests {
		// Cap 1: the slot is taken before the create. Cap 10, after a
		// start that saw it nearly empty: during the create.
		for _, limit := range []int{1, 10} {
			t.Run(fmt.Sprintf("%s, cap %d", tt.name, limit), func(t *testing.T) {
				t.Parallel()
				r := newRig(t, Config{MaxLiveSandboxesPerTenant: limit})
				if limit > 1 {
					other := Key{Tenant: "acme", Principal: "alice", SessionID: "other"}
					r.mustStart(t, ctx, other, StartOptions{})
					if _, err := r.m.Stop(ctx, other); err != nil {
						t.Fatal(err)
					}
				}
				tt.fault(r)
				if _, err := r.m.Start(ctx, testKey, StartOptions{}); err == nil {
					t.Fatal("start succeeded despite the fault")
				}
				r.sbx.fail, r.store.fail = nil, nil
				if n := r.store.heldSlots("acme"); n != 0 || len(r.sbx.live()) != 0 {
					t.Fatalf("%d slots held, live %v after a failed start", n, r.sbx.live())
				}
				// The whole cap is free again.
				for i := range limit {
					r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("next-", i)}, StartOptions{})
				}
			})
		}
	}
}

// TestSlotOfCrashedStart: a start that died holding its slot (after the
// slot, before recording its sandbox) keeps it only while its lease holds;
// then the reaper's tick or the next call on the session gives it back.
func TestSlotOfCrashedStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	crash := func(t *testing.T, r *rig, withSandbox bool) {
		t.Helper()
		now := r.clock.Now()
		s := &Session{Key: testKey, CreatedAt: now, Type: TypeCodeInterpreter, Template: "code-interpreter-v1"}
		r.m.lease(s, StateStarting, "dead-owner", now)
		slot := r.m.newSlot(testKey.Principal, testKey.SessionID)
		s.Slot = slot.String()
		if err := r.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := r.m.takeSlot(ctx, testKey.Tenant, slot); err != nil {
			t.Fatal(err)
		}
		if withSandbox {
			if _, err := r.sbx.Create(ctx, SandboxSpec{Template: s.Template, Metadata: r.m.sandboxMetadata(s)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("reaper", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{MaxLiveSandboxesPerTenant: 1})
		crash(t, r, false)
		if rep, err := r.m.Reap(ctx); err != nil || rep != (ReapReport{}) || r.store.heldSlots("acme") != 1 {
			t.Fatalf("under its lease: reap %+v %v, %d slots", rep, err, r.store.heldSlots("acme"))
		}
		r.clock.Advance(61 * time.Second)
		if _, err := r.m.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		if n := r.store.heldSlots("acme"); n != 0 {
			t.Fatalf("%d slots after the stale start was reaped", n)
		}
		if s := r.store.session(testKey); s.State != StateError || s.Slot != "" {
			t.Fatalf("session %+v", s)
		}
	})
	t.Run("next call", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{MaxLiveSandboxesPerTenant: 1})
		crash(t, r, true)
		r.clock.Advance(61 * time.Second)
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
			t.Fatalf("execute after a crashed start, cap 1: %v", err)
		}
		if n := r.store.heldSlots("acme"); n != 1 {
			t.Fatalf("%d slots held, want 1", n)
		}
	})
}

// TestSlotOfLostStart: a stop that takes the record from a start in
// progress gives the slot back; the start, finding its record gone, kills
// its sandbox and starts again with a slot of its own, and no slot leaks.
func TestSlotOfLostStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 2})
	entered, gate := make(chan struct{}), make(chan struct{})
	first := true
	r.sbx.fail = func(op, _ string) error {
		if op == "Create" && first {
			first = false
			close(entered)
			<-gate
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.m.Start(ctx, testKey, StartOptions{})
		done <- err
	}()
	<-entered
	if _, err := r.m.Stop(ctx, testKey); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("start after losing its record: %v", err)
	}
	if n, live := r.store.heldSlots("acme"), r.sbx.live(); n != 1 || len(live) != 1 {
		t.Fatalf("%d slots held, live %v; want one of each", n, live)
	}
}

// TestReaperFreesLeakedSlots: slots whose session has no sandbox at the
// provider and does not rely on them are freed within one tick once older
// than a lease; the others stay.
func TestReaperFreesLeakedSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 5})
	running := r.mustStart(t, ctx, testKey, StartOptions{})
	leak := func(session string) {
		if err := r.m.takeSlot(ctx, "acme", r.m.newSlot("alice", session)); err != nil {
			t.Fatal(err)
		}
	}
	leak("no-record") // a record deleted, or never written
	stopped := Key{Tenant: "acme", Principal: "alice", SessionID: "stopped"}
	r.mustStart(t, ctx, stopped, StartOptions{})
	if _, err := r.m.Stop(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	leak("stopped") // a stop that died between its write and the give-back
	if err := r.m.takeSlot(ctx, "acme", Slot{Token: "once", Principal: "bob", TakenAt: r.clock.Now()}); err != nil {
		t.Fatal(err) // a one-shot execution's, still within its lifetime
	}
	if rep, err := r.m.Reap(ctx); err != nil || rep.Slots != 0 || r.store.heldSlots("acme") != 4 {
		t.Fatalf("younger than a lease: reap %+v %v, %d slots", rep, err, r.store.heldSlots("acme"))
	}
	r.clock.Advance(2 * time.Minute)
	// The running session stays in use: keep it active for the tick.
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := r.m.Reap(ctx)
	if err != nil || rep.Slots != 2 || rep.Errors != 0 {
		t.Fatalf("reap %+v %v, want 2 slots freed", rep, err)
	}
	slots, _ := r.store.TenantSlots(ctx, "acme")
	if len(slots) != 2 {
		t.Fatalf("slots left %+v, want the running session's and the one-shot's", slots)
	}
	for _, s := range slots {
		if s.SessionID != "" && s.String() != r.store.session(testKey).Slot {
			t.Fatalf("slot %+v is not the running session's", s)
		}
	}
	if got := r.store.session(testKey); got.SandboxID != running.SandboxID || got.State != StateRunning {
		t.Fatalf("running session disturbed: %+v", got)
	}
	r.clock.Advance(time.Hour)
	if rep, err := r.m.Reap(ctx); err != nil || rep.Slots != 1 {
		t.Fatalf("reap %+v %v, want the expired one-shot slot freed", rep, err)
	}
}

// TestStartOverlapsSlotAndCreate: once a start has seen the tenant's cap far
// from full, the next takes its slot while its sandbox is being created
// (the slot's write waits here until Create has begun, which a start taking
// them one after the other would never reach); knowing nothing, or near the
// cap, a start takes its slot first.
func TestStartOverlapsSlotAndCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 10})
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: "first"}, StartOptions{})
	creating := make(chan struct{})
	r.sbx.fail = func(op, _ string) error {
		if op == "Create" {
			close(creating)
		}
		return nil
	}
	r.store.fail = func(op string) error {
		if op == "TakeSlot" {
			select {
			case <-creating:
			case <-time.After(5 * time.Second):
				return errors.New("the slot was taken before the create began")
			}
		}
		return nil
	}
	r.mustStart(t, ctx, testKey, StartOptions{})
	if n := r.store.heldSlots("acme"); n != 2 {
		t.Fatalf("%d slots held, want 2", n)
	}

	// Near the cap (4 of 5 held, as last seen), the slot comes first.
	near := newRig(t, Config{MaxLiveSandboxesPerTenant: 5})
	for i := range 4 {
		near.mustStart(t, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("s", i)}, StartOptions{})
	}
	order := make(chan string, 2)
	near.sbx.fail = func(op, _ string) error {
		if op == "Create" {
			order <- op
		}
		return nil
	}
	near.store.fail = func(op string) error {
		if op == "TakeSlot" {
			order <- op
		}
		return nil
	}
	near.mustStart(t, ctx, testKey, StartOptions{})
	if first := <-order; first != "TakeSlot" {
		t.Fatalf("near the cap, %s came first", first)
	}
}

// TestOverlappedStartRefusedByCap: a start that overlapped its slot and its
// create on a stale view (another process filled the cap meanwhile) is
// refused by the slot's write, kills the sandbox it made, and leaves the
// cap exact.
func TestOverlappedStartRefusedByCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 6, MaxLiveSandboxesPerPrincipal: 6})
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: "first"}, StartOptions{})
	// Other processes' starts: slots taken behind this Manager's back.
	for i := range 5 {
		if _, err := r.store.TakeSlot(ctx, "acme", Slot{Token: fmt.Sprint("other-", i), Principal: "alice", SessionID: fmt.Sprint("o", i)},
			SlotLimits{Tenant: 6, Principal: 6}); err != nil {
			t.Fatal(err)
		}
	}
	creates := r.sbx.count("Create")
	_, err := r.m.Start(ctx, testKey, StartOptions{})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("start past the cap: %v, want ErrLimit", err)
	}
	if r.sbx.count("Create") != creates+1 || len(r.sbx.live()) != 1 || r.store.heldSlots("acme") != 6 {
		t.Fatalf("%d creates, live %v, %d slots: want the overlapped create killed, 1 live, 6 slots",
			r.sbx.count("Create")-creates, r.sbx.live(), r.store.heldSlots("acme"))
	}
	if s := r.store.session(testKey); s.State != StateStopped || s.Slot != "" {
		t.Fatalf("refused session %+v", s)
	}
	// Having learned the cap is full, the next start takes its slot first
	// and creates nothing.
	k := testKey
	k.SessionID = "again"
	if _, err := r.m.Start(ctx, k, StartOptions{}); !errors.Is(err, ErrLimit) || r.sbx.count("Create") != creates+1 {
		t.Fatalf("second start: %v, %d creates", err, r.sbx.count("Create")-creates)
	}
}

// TestReaperAdoptsUnslottedSandboxes: sandboxes of sessions started before
// the cap moved into the table (their records name no slot) get one at the
// reaper's next tick, even past the cap, and count from then on; a stop
// gives it back as any other.
func TestReaperAdoptsUnslottedSandboxes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 1})
	legacy := func(id string) Key {
		k := Key{Tenant: "acme", Principal: "alice", SessionID: id}
		r.mustStart(t, ctx, k, StartOptions{})
		s := r.store.session(k)
		slot, err := ParseSlot(s.Slot)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.store.ReleaseSlot(ctx, "acme", slot); err != nil {
			t.Fatal(err)
		}
		s.Slot = ""
		r.store.put(s)
		return k
	}
	a, b := legacy("old-a"), legacy("old-b")
	if n := r.store.heldSlots("acme"); n != 0 {
		t.Fatalf("%d slots before the tick", n)
	}
	if rep, err := r.m.Reap(ctx); err != nil || rep.Errors != 0 {
		t.Fatalf("reap %+v %v", rep, err)
	}
	if n := r.store.heldSlots("acme"); n != 2 {
		t.Fatalf("%d slots after the tick, want both sandboxes', past the cap of 1", n)
	}
	for _, k := range []Key{a, b} {
		if r.store.session(k).Slot == "" {
			t.Fatalf("record of %s names no slot", k.SessionID)
		}
	}
	if _, err := r.m.Start(ctx, testKey, StartOptions{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("a start past the adopted slots: %v, want ErrLimit", err)
	}
	// A second tick changes nothing.
	if rep, err := r.m.Reap(ctx); err != nil || rep != (ReapReport{}) || r.store.heldSlots("acme") != 2 {
		t.Fatalf("second tick: %+v %v, %d slots", rep, err, r.store.heldSlots("acme"))
	}
	for _, k := range []Key{a, b} {
		if _, err := r.m.Stop(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.store.heldSlots("acme"); n != 0 {
		t.Fatalf("%d slots after both stopped", n)
	}
	r.mustStart(t, ctx, testKey, StartOptions{})
}
