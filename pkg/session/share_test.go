package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPrincipalShare: while another principal of the tenant has live
// sandboxes, a principal holds at most its share of the tenant's cap (half,
// rounded up, by default); alone it may use the whole cap. A refusal is
// ErrLimit with a RetryAfter and a detail naming the share.
func TestPrincipalShare(t *testing.T) {
	t.Parallel()
	alice := func(i int) Key { return Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("a", i)} }
	bob := func(i int) Key { return Key{Tenant: "acme", Principal: "bob", SessionID: fmt.Sprint("b", i)} }
	cases := []struct {
		name      string
		cfg       Config
		bobFirst  int // bob's live sandboxes before alice starts
		aliceWant int // how many of alice's starts succeed, of tenant cap
	}{
		{"alone uses the whole cap", Config{MaxLiveSandboxesPerTenant: 5}, 0, 5},
		{"default share is half rounded up", Config{MaxLiveSandboxesPerTenant: 5}, 1, 3},
		{"configured share", Config{MaxLiveSandboxesPerTenant: 6, MaxLiveSandboxesPerPrincipal: 2}, 1, 2},
		{"share and tenant cap together", Config{MaxLiveSandboxesPerTenant: 4, MaxLiveSandboxesPerPrincipal: 4}, 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newRig(t, c.cfg)
			for i := range c.bobFirst {
				r.mustStart(t, ctx, bob(i), StartOptions{})
			}
			started := 0
			for i := range c.cfg.MaxLiveSandboxesPerTenant {
				_, err := r.m.Start(ctx, alice(i), StartOptions{})
				if err == nil {
					started++
					continue
				}
				e, ok := errors.AsType[*Error](err)
				if !errors.Is(err, ErrLimit) || !ok || e.RetryAfter <= 0 {
					t.Fatalf("start %d: %v, want ErrLimit with RetryAfter", i, err)
				}
			}
			if started != c.aliceWant {
				t.Fatalf("alice started %d, want %d", started, c.aliceWant)
			}
		})
	}
}

// TestPrincipalShareLocksNobodyOut: one principal filling its share leaves
// room for another, who can start while the first is refused.
func TestPrincipalShareLocksNobodyOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 4})
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "bob", SessionID: "b0"}, StartOptions{})
	for i := range 2 {
		r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("a", i)}, StartOptions{})
	}
	_, err := r.m.Start(ctx, Key{Tenant: "acme", Principal: "alice", SessionID: "a2"}, StartOptions{})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "share") {
		t.Fatalf("alice past her share: %v", err)
	}
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "bob", SessionID: "b1"}, StartOptions{})
}

// TestPrincipalShareHoldsUnderRacingStarts: racing starts of one principal
// beside another's sandbox get exactly its share, and the others create
// nothing.
func TestPrincipalShareHoldsUnderRacingStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 10, MaxLiveSandboxesPerPrincipal: 3})
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "bob", SessionID: "b0"}, StartOptions{})
	const racers = 6
	r.sbx.holdCreates(3)
	var started atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			_, err := r.m.Start(ctx, Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("race-", i)}, StartOptions{})
			switch {
			case err == nil:
				started.Add(1)
			case !errors.Is(err, ErrLimit):
				t.Errorf("start %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if started.Load() != 3 || len(r.sbx.live()) != 4 || r.sbx.count("Create") != 4 {
		t.Fatalf("%d started, live %v, %d creates: want 3 started, 4 live, 4 creates", started.Load(), r.sbx.live(), r.sbx.count("Create"))
	}
}
