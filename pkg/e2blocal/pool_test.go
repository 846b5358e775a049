//go:build linux

package e2blocal

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDemandMeter(t *testing.T) {
	t.Parallel()
	const window = time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var d demandMeter
	if got := d.peak(t0, window); got != 0 {
		t.Fatalf("peak before any create: %d", got)
	}
	for i := range 6 { // a burst of six within a second
		d.record(t0.Add(time.Duration(i)*100*time.Millisecond), window)
	}
	for i := range 3 { // then creates far apart
		d.record(t0.Add(time.Duration(10+5*i)*time.Second), window)
	}
	if got := d.peak(t0.Add(30*time.Second), window); got != 6 {
		t.Fatalf("peak within the window: %d, want 6", got)
	}
	if got := d.peak(t0.Add(2*window), window); got != 0 {
		t.Fatalf("peak after the window: %d, want 0", got)
	}
	d.record(t0.Add(2*window), window)
	if got := d.peak(t0.Add(2*window), window); got != 1 {
		t.Fatalf("peak after a lone create past the window: %d, want 1", got)
	}
}

// TestPoolFollowsDemand: after a burst of creates the pool grows to the
// burst (up to WarmPoolMax), so the next burst finds its trees spawned, and
// shrinks back to WarmPool once the window passes without another.
func TestPoolFollowsDemand(t *testing.T) {
	// The window outlasts the burst's creates on a loaded host (seconds
	// each); waitPool's deadline outlasts the window.
	rt := startRuntime(t, Config{WarmPool: 1, WarmPoolMax: 3, WarmPoolWindow: 10 * time.Second})
	waitPool := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(rt.pool) != want {
			if time.Now().After(deadline) {
				t.Fatalf("pool holds %d trees, want %d", len(rt.pool), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPool(1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { createSandbox(t, rt, nil) })
	}
	wg.Wait()
	if got := rt.poolTarget(time.Now()); got != 3 {
		t.Fatalf("target after a burst of 4: %d, want WarmPoolMax 3", got)
	}
	waitPool(3)
	waitPool(1)
}

// setSpawnLimit changes how many trees start at once for waiting creates.
func setSpawnLimit(rt *Runtime, n int) {
	rt.supply.mu.Lock()
	defer rt.supply.mu.Unlock()
	rt.supply.limit = n
	rt.kickLocked()
}

// supplyState is the tree supply's counters.
func supplyState(rt *Runtime) (waiters, inflight, starting int) {
	rt.supply.mu.Lock()
	defer rt.supply.mu.Unlock()
	return len(rt.supply.waiters), rt.supply.inflight, rt.supply.starting
}

// TestRefillServesWaitingCreate: a create that found the pool empty takes
// the first tree to finish spawning, here one the runtime spawned for the
// pool while the create's own spawn could not start.
func TestRefillServesWaitingCreate(t *testing.T) {
	rt := startRuntime(t, Config{WarmPool: -1})
	setSpawnLimit(rt, 0)
	got := make(chan sandboxBody, 1)
	go func() { got <- createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1"}) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if w, _, _ := supplyState(rt); w == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the create never waited for a tree")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tree, err := rt.prepare(false, true)
	if err != nil {
		t.Fatalf("spawn a tree: %v", err)
	}
	rt.offer(tree)
	sb := <-got
	if sb.SandboxID != tree.id {
		t.Fatalf("the create got sandbox %s, not the tree offered (%s)", sb.SandboxID, tree.id)
	}
	if out := execute(t, rt, sb, "6 * 7"); !strings.Contains(out, `"42"`) {
		t.Fatalf("execute in the handed-over tree: %s", out)
	}
	setSpawnLimit(rt, 2)
	if w, i, s := supplyState(rt); w != 0 || i != 0 || s != 0 {
		t.Fatalf("after the create: %d waiting, %d spawning, %d starting", w, i, s)
	}
}

// TestBurstStartsBoundedTrees: a burst of creates with no pool starts at
// most the limit's trees at once, and every create gets its own sandbox.
func TestBurstStartsBoundedTrees(t *testing.T) {
	const burst, limit = 6, 2
	rt := startRuntime(t, Config{WarmPool: -1})
	setSpawnLimit(rt, limit)
	stop := make(chan struct{})
	peak := make(chan int)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				peak <- most
				return
			default:
			}
			_, _, s := supplyState(rt)
			most = max(most, s)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	ids := make(chan string, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() { ids <- createSandbox(t, rt, map[string]any{"templateID": "base"}).SandboxID })
	}
	wg.Wait()
	close(stop)
	if most := <-peak; most < 1 || most > limit {
		t.Fatalf("%d trees started at once, want 1 to %d", most, limit)
	}
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] || rt.lookup(id) == nil {
			t.Fatalf("sandbox %s handed out twice or not registered", id)
		}
		seen[id] = true
	}
	if w, i, s := supplyState(rt); w != 0 || i != 0 || s != 0 {
		t.Fatalf("after the burst: %d waiting, %d spawning, %d starting", w, i, s)
	}
}

// TestFailedSpawnFailsWaitingCreate: when spawning fails, the waiting
// creates get the error instead of waiting forever, and the next create
// works once spawning does.
func TestFailedSpawnFailsWaitingCreate(t *testing.T) {
	rt := startRuntime(t, Config{WarmPool: -1})
	bwrap := rt.cfg.Bwrap
	rt.cfg.Bwrap = "/nonexistent/bwrap"
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := rt.create(t.Context(), createParams{templateID: "base", timeout: time.Minute})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || !strings.Contains(err.Error(), "bwrap") {
			t.Fatalf("create with a broken bwrap: %v, want the spawn's error", err)
		}
	}
	if w, i, s := supplyState(rt); w != 0 || i != 0 || s != 0 {
		t.Fatalf("after failed spawns: %d waiting, %d spawning, %d starting", w, i, s)
	}
	rt.cfg.Bwrap = bwrap
	s, err := rt.create(t.Context(), createParams{templateID: "base", timeout: time.Minute})
	if err != nil {
		t.Fatalf("create after spawning works again: %v", err)
	}
	if err := s.kill(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestDemandFile: the burst memory a runtime saves is restored by the
// next one on the same DataDir while it is recent, capped at WarmPoolMax;
// a stale, future or unreadable one is ignored.
func TestDemandFile(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		file string // "" writes none
		want int
	}{
		{"recent", `{"peak":6,"at":"2026-01-01T11:58:00Z"}`, 6},
		{"capped at WarmPoolMax", `{"peak":50,"at":"2026-01-01T11:58:00Z"}`, 8},
		{"past the window", `{"peak":6,"at":"2026-01-01T11:40:00Z"}`, 0},
		{"in the future", `{"peak":6,"at":"2026-01-01T13:00:00Z"}`, 0},
		{"unreadable", `{"peak":`, 0},
		{"none", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, demandFile), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			rt := &Runtime{cfg: Config{DataDir: dir, WarmPoolMax: 8, WarmPoolWindow: 10 * time.Minute}, log: slog.New(slog.DiscardHandler)}
			rt.loadDemand(now)
			if got := rt.demand.peak(now, rt.cfg.WarmPoolWindow); got != tc.want {
				t.Fatalf("restored peak %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("saved and restored", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := Config{DataDir: dir, WarmPoolMax: 8, WarmPoolWindow: 10 * time.Minute}
		a := &Runtime{cfg: cfg, log: slog.New(slog.DiscardHandler)}
		for i := range 5 {
			a.demand.record(now.Add(time.Duration(i)*100*time.Millisecond), cfg.WarmPoolWindow)
		}
		if err := a.saveDemand(); err != nil {
			t.Fatal(err)
		}
		b := &Runtime{cfg: cfg, log: slog.New(slog.DiscardHandler)}
		b.loadDemand(now.Add(time.Minute))
		if got := b.demand.peak(now.Add(time.Minute), cfg.WarmPoolWindow); got != 5 {
			t.Fatalf("peak after a restart: %d, want 5", got)
		}
	})
}

// TestPoolRemembersBurstAcrossRestart: a runtime started on the DataDir of
// one that saw a burst fills its pool to that burst.
func TestPoolRemembersBurstAcrossRestart(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), WarmPool: 1, WarmPoolMax: 3, WarmPoolWindow: time.Minute}
	first := startRuntime(t, cfg)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { createSandbox(t, first, nil) })
	}
	wg.Wait()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := startRuntime(t, cfg)
	if got := second.poolTarget(time.Now()); got != 3 {
		t.Fatalf("pool target after the restart: %d, want the burst of 3", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(second.pool) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("pool holds %d trees, want 3", len(second.pool))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTakeWarmWaitIsBounded: a create that finds the pool empty and no
// spawn slot free (every one taken by spawns a loaded host runs slowly)
// gives up after StartTimeout as overloaded, which the API answers 503
// with Retry-After, and leaves the queue.
func TestTakeWarmWaitIsBounded(t *testing.T) {
	t.Parallel()
	rt := &Runtime{cfg: Config{StartTimeout: 50 * time.Millisecond}, ctx: t.Context()}
	// limit 0: no spawn starts for the waiting create.
	type result struct {
		s   *sandbox
		err error
	}
	got := make(chan result, 1)
	go func() {
		s, err := rt.takeWarm(true)
		got <- result{s, err}
	}()
	select {
	case r := <-got:
		if r.s != nil || !overloaded(r.err) {
			t.Fatalf("takeWarm = %v, %v; want an overload error", r.s, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a create still waits for a tree 100 × StartTimeout later")
	}
	rt.supply.mu.Lock()
	defer rt.supply.mu.Unlock()
	if n := len(rt.supply.waiters); n != 0 {
		t.Fatalf("%d creates still queued for a tree", n)
	}
}
