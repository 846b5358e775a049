package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestReap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    StartOptions
		stop    bool
		advance time.Duration
		want    ReapReport
		state   State
	}{
		{"not due", StartOptions{}, false, 29 * time.Minute, ReapReport{}, StateRunning},
		{"idle kill", StartOptions{}, false, 31 * time.Minute, ReapReport{Killed: 1}, StateStopped},
		{"idle pause", StartOptions{Pause: true}, false, 31 * time.Minute, ReapReport{Paused: 1}, StatePaused},
		{"own idle timeout", StartOptions{IdleTimeoutSecs: 60}, false, 61 * time.Second, ReapReport{Killed: 1}, StateStopped},
		{"already stopped", StartOptions{}, true, 31 * time.Minute, ReapReport{}, StateStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{})
			s, err := r.m.Start(ctx, testKey, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.stop {
				if _, err := r.m.Stop(ctx, testKey); err != nil {
					t.Fatal(err)
				}
			}
			kills := r.sbx.count("Kill")
			r.clock.Advance(tt.advance)
			rep, err := r.m.Reap(ctx)
			if err != nil || rep != tt.want {
				t.Fatalf("report %+v %v, want %+v", rep, err, tt.want)
			}
			got := r.store.session(testKey)
			if got.State != tt.state {
				t.Fatalf("state %s, want %s", got.State, tt.state)
			}
			if r.sbx.count("Kill")-kills != tt.want.Killed {
				t.Fatalf("kills %d", r.sbx.count("Kill")-kills)
			}
			if tt.want.Killed == 1 && len(r.sbx.live()) != 0 {
				t.Fatalf("sandbox %s survives", s.SandboxID)
			}
			// A second tick finds nothing more to do.
			if rep, err := r.m.Reap(ctx); err != nil || rep != (ReapReport{}) {
				t.Fatalf("second tick %+v %v", rep, err)
			}
		})
	}
}

func TestReapPausedAtLifetime(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(31 * time.Minute)
	if rep, _ := r.m.Reap(ctx); rep.Paused != 1 {
		t.Fatalf("%+v", rep)
	}
	r.clock.Advance(time.Hour)
	if rep, _ := r.m.Reap(ctx); rep != (ReapReport{}) {
		t.Fatalf("paused within lifetime: %+v", rep)
	}
	r.clock.Advance(30 * time.Minute)
	if rep, _ := r.m.Reap(ctx); rep.Killed != 1 {
		t.Fatalf("paused past lifetime: %+v", rep)
	}
	if s := r.store.session(testKey); s.State != StateStopped || len(r.sbx.live()) != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestReapLifetimeKillsEvenWithPause(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{IdleTimeout: 2 * time.Hour, Lifetime: 2 * time.Hour})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(2*time.Hour + time.Second)
	if rep, _ := r.m.Reap(ctx); rep.Killed != 1 || rep.Paused != 0 {
		t.Fatalf("%+v", rep)
	}
}

func TestReapOverlappingTicks(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	for i := range 20 {
		k := testKey
		k.SessionID = fmt.Sprint("s", i)
		r.mustStart(t, ctx, k, StartOptions{Pause: i%2 == 0})
	}
	r.clock.Advance(31 * time.Minute)
	reports := make([]ReapReport, 4)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() {
			rep, err := r.m.Reap(ctx)
			if err != nil {
				t.Error(err)
			}
			reports[i] = rep
		})
	}
	wg.Wait()
	var total ReapReport
	for _, rep := range reports {
		total.Paused += rep.Paused
		total.Killed += rep.Killed
		total.Errors += rep.Errors
		total.Orphans += rep.Orphans
	}
	if total != (ReapReport{Paused: 10, Killed: 10}) {
		t.Fatalf("overlapping ticks did %+v", total)
	}
	if r.sbx.count("Pause") != 10 || r.sbx.count("Kill") != 10 {
		t.Fatalf("provider calls: pause %d kill %d", r.sbx.count("Pause"), r.sbx.count("Kill"))
	}
}

func TestReapRacingUserCall(t *testing.T) {
	t.Parallel()
	// A user call records activity between the reaper's read and its write:
	// the reaper's conditional write loses, it re-reads, and leaves the
	// session alone.
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{})
	r.clock.Advance(31 * time.Minute)
	due, err := r.store.DueSessions(ctx, r.clock.Now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatal(due, err)
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatal(err)
	}
	if out := r.m.reapOne(ctx, due[0]); out != reapNothing {
		t.Fatalf("outcome %v", out)
	}
	if s := r.store.session(testKey); s.State != StateRunning || len(r.sbx.live()) != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestReapProviderErrors(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{})
	r.clock.Advance(31 * time.Minute)
	r.sbx.fail = func(op, id string) error {
		if op == "Kill" {
			return Errorf(ErrUnavailable, "provider 500")
		}
		return nil
	}
	if rep, err := r.m.Reap(ctx); err != nil || rep.Errors != 1 || rep.Killed != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
	s := r.store.session(testKey)
	if s.State != StateStopping || s.DueAt.IsZero() {
		t.Fatalf("after a failed kill %+v", s)
	}
	// Within the lease nobody interferes; after it the next tick finishes.
	r.sbx.fail = nil
	if rep, _ := r.m.Reap(ctx); rep != (ReapReport{}) {
		t.Fatalf("within lease %+v", rep)
	}
	r.clock.Advance(2 * time.Minute)
	if rep, _ := r.m.Reap(ctx); rep.Killed != 1 {
		t.Fatalf("after lease %+v", rep)
	}
	if s := r.store.session(testKey); s.State != StateStopped || len(r.sbx.live()) != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestReapPauseOfGoneSandbox(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	s := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.sbx.vanish(s.SandboxID)
	r.clock.Advance(31 * time.Minute)
	if rep, err := r.m.Reap(ctx); err != nil || rep.Killed != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if got := r.store.session(testKey); got.State != StateStopped {
		t.Fatalf("%+v", got)
	}
}

func TestReapStoreDown(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.store.fail = func(op string) error { return errors.New("dynamodb unreachable") }
	if _, err := r.m.Reap(context.Background()); err == nil {
		t.Fatal("expected an error")
	}
}

func TestReapStaleStartingLease(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	now := r.clock.Now()
	r.store.put(&Session{Key: testKey, State: StateStarting, LeaseOwner: "dead", LeaseUntil: now.Add(time.Minute),
		DueAt: now.Add(time.Minute), Version: 1})
	if rep, _ := r.m.Reap(ctx); rep != (ReapReport{}) {
		t.Fatalf("%+v", rep)
	}
	if s := r.store.session(testKey); s.State != StateStarting {
		t.Fatalf("live lease cleared: %+v", s)
	}
	r.clock.Advance(2 * time.Minute)
	if _, err := r.m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	s := r.store.session(testKey)
	if s.State != StateError || !s.DueAt.IsZero() || s.LeaseOwner != "" {
		t.Fatalf("stale lease kept: %+v", s)
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestReapOrphans(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	owned := r.mustStart(t, ctx, testKey, StartOptions{})
	start := r.clock.Now()
	md := func(session string) map[string]string {
		return map[string]string{MetaStack: "stack-test", MetaTenant: "acme", MetaPrincipal: "alice", MetaSession: session}
	}
	// A sandbox whose start died before recording it, one of a stopped
	// session, one without owner metadata, one of another stack, a young one.
	r.sbx.add(SandboxInfo{ID: "unrecorded", Metadata: md("chat-1"), StartedAt: start})
	r.sbx.add(SandboxInfo{ID: "no-owner", Metadata: map[string]string{MetaStack: "stack-test"}, StartedAt: start})
	r.sbx.add(SandboxInfo{ID: "unknown-session", Metadata: md("nope"), StartedAt: start})
	r.sbx.add(SandboxInfo{ID: "other-stack", Metadata: map[string]string{MetaStack: "prod-2"}, StartedAt: start})
	r.clock.Advance(5 * time.Minute)
	r.sbx.add(SandboxInfo{ID: "young", Metadata: md("nope"), StartedAt: r.clock.Now()})

	// Keep the owned session active so only orphans are due.
	r.clock.Advance(6 * time.Minute)
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := r.m.Reap(ctx)
	if err != nil || rep != (ReapReport{Orphans: 3}) {
		t.Fatalf("%+v %v", rep, err)
	}
	if live := fmt.Sprint(r.sbx.live()); live != fmt.Sprintf("[other-stack %s young]", owned.SandboxID) {
		t.Fatalf("live %s", live)
	}
}

func TestShortIdleTimeoutWritesActivityOften(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{IdleTimeoutSecs: 20})
	// Busy every 8s for a minute: each 10s (half the idle timeout) records
	// activity, so the reaper never finds it idle.
	for range 8 {
		r.clock.Advance(8 * time.Second)
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
			t.Fatal(err)
		}
		if rep, err := r.m.Reap(ctx); err != nil || rep != (ReapReport{}) {
			t.Fatalf("reaped a busy session: %+v %v", rep, err)
		}
	}
}

func TestReapCancelledLeavesNoGoroutines(t *testing.T) {
	t.Parallel()
	// In a synctest bubble: the tick is cancelled while one of its workers
	// is held inside a provider call; Reap must wait for that worker rather
	// than return and leave it running.
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{ReapParallelism: 4, MaxLiveSandboxesPerTenant: 100})
		ctx := t.Context()
		for i := range 30 {
			k := testKey
			k.SessionID = fmt.Sprint("s", i)
			r.mustStart(t, ctx, k, StartOptions{})
		}
		r.clock.Advance(31 * time.Minute)
		cctx, cancel := context.WithCancel(ctx)
		gate := make(chan struct{})
		var kills atomic.Int32
		r.sbx.fail = func(op, id string) error {
			if op == "Kill" && kills.Add(1) == 5 {
				cancel()
				<-gate
			}
			return nil
		}
		type result struct {
			rep ReapReport
			err error
		}
		done := make(chan result, 1)
		go func() {
			rep, err := r.m.Reap(cctx)
			done <- result{rep, err}
		}()
		synctest.Wait()
		select {
		case res := <-done:
			close(gate)
			t.Fatalf("Reap returned while a worker was still in a provider call: %+v", res)
		default:
		}
		close(gate)
		res := <-done
		if res.err == nil || res.rep.Killed+res.rep.Errors == 0 || res.rep.Killed+res.rep.Errors > 30 {
			t.Fatalf("cancelled tick: %+v %v", res.rep, res.err)
		}
		// The next tick finishes what the cancelled one left.
		r.sbx.fail = nil
		r.clock.Advance(2 * time.Minute)
		if _, err := r.m.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		if live := r.sbx.live(); len(live) != 0 {
			t.Fatalf("left running: %v", live)
		}
	})
}

func TestReapPauseRacingUserCall(t *testing.T) {
	t.Parallel()
	// The reaper is inside the provider's Pause when a user call comes: the
	// call must not go ahead on a sandbox about to be paused (it would
	// record running while the pause lands after it). It waits, then
	// resumes the paused sandbox.
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ctx := t.Context()
		s := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		r.clock.Advance(31 * time.Minute)
		entered, gate := r.sbx.holdPauses()
		reaped := make(chan ReapReport, 1)
		go func() {
			rep, err := r.m.Reap(ctx)
			if err != nil {
				t.Error(err)
			}
			reaped <- rep
		}()
		<-entered
		executed := make(chan error, 1)
		go func() {
			res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
			if err == nil && (res.Restarted || res.Stdout != "x\n") {
				err = fmt.Errorf("result %+v", res)
			}
			executed <- err
		}()
		synctest.Wait()
		select {
		case err := <-executed:
			close(gate)
			<-reaped
			t.Fatalf("the user call went ahead while the sandbox was being paused (err %v)", err)
		default:
		}
		close(gate)
		if rep := <-reaped; rep != (ReapReport{Paused: 1}) {
			t.Fatalf("reap %+v", rep)
		}
		if err := <-executed; err != nil {
			t.Fatal(err)
		}
		got := r.store.session(testKey)
		info, err := r.sbx.Get(ctx, s.SandboxID)
		if err != nil || got.State != StateRunning || got.SandboxID != s.SandboxID || info.State != StateRunning {
			t.Fatalf("record %s on %s, sandbox %s (%v)", got.State, got.SandboxID, info.State, err)
		}
	})
}

func TestReapPauseFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("a pause that fails is recorded paused and resumed on use", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		r.clock.Advance(31 * time.Minute)
		r.sbx.fail = func(op, id string) error {
			if op == "Pause" {
				return Errorf(ErrUnavailable, "provider 502")
			}
			return nil
		}
		if rep, err := r.m.Reap(ctx); err != nil || rep.Errors != 1 {
			t.Fatalf("%+v %v", rep, err)
		}
		if s := r.store.session(testKey); s.State != StatePaused || s.LeaseOwner != "" {
			t.Fatalf("record %+v", s)
		}
		r.sbx.fail = nil
		if res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil || res.Restarted {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("a reaper that died mid-pause: its lease runs out, a user call resumes", func(t *testing.T) {
		r := newRig(t, Config{})
		s := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		cur := r.store.session(testKey)
		now := r.clock.Now()
		cur.State, cur.LeaseOwner, cur.LeaseUntil, cur.DueAt = StatePausing, "dead", now.Add(time.Minute), now.Add(time.Minute)
		r.store.put(cur)
		if st, err := r.m.Status(ctx, testKey); err != nil || st.State != StatePaused {
			t.Fatalf("status %+v %v", st, err)
		}
		r.clock.Advance(2 * time.Minute)
		res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
		if err != nil || res.Restarted || r.sbx.count("Connect") != 1 {
			t.Fatalf("%+v %v connects %d", res, err, r.sbx.count("Connect"))
		}
		if got := r.store.session(testKey); got.State != StateRunning || got.SandboxID != s.SandboxID || got.LeaseOwner != "" {
			t.Fatalf("record %+v", got)
		}
	})
	t.Run("a reaper that died mid-pause: the next tick pauses", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		r.clock.Advance(31 * time.Minute)
		cur := r.store.session(testKey)
		now := r.clock.Now()
		cur.State, cur.LeaseOwner, cur.LeaseUntil, cur.DueAt = StatePausing, "dead", now.Add(time.Minute), now.Add(time.Minute)
		r.store.put(cur)
		if rep, _ := r.m.Reap(ctx); rep != (ReapReport{}) {
			t.Fatalf("within the lease %+v", rep)
		}
		r.clock.Advance(2 * time.Minute)
		if rep, err := r.m.Reap(ctx); err != nil || rep != (ReapReport{Paused: 1}) {
			t.Fatalf("%+v %v", rep, err)
		}
		if s := r.store.session(testKey); s.State != StatePaused || !s.DueAt.Equal(s.LifetimeDeadline) {
			t.Fatalf("record %+v", s)
		}
	})
}

func TestReapPauseOutlastingItsLease(t *testing.T) {
	t.Parallel()
	// The pause takes longer than the lease: a user call takes the session
	// over and resumes it (a no-op, it still runs), then the pause lands.
	// The reaper, finding its lease gone and the sandbox recorded running,
	// resumes it again.
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ctx := t.Context()
		s := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
		r.clock.Advance(31 * time.Minute)
		entered, gate := r.sbx.holdPauses()
		reaped := make(chan ReapReport, 1)
		go func() {
			rep, _ := r.m.Reap(ctx)
			reaped <- rep
		}()
		<-entered
		r.clock.Advance(2 * time.Minute)
		if res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil || res.Restarted {
			close(gate)
			t.Fatalf("%+v %v", res, err)
		}
		close(gate)
		<-reaped
		got := r.store.session(testKey)
		info, err := r.sbx.Get(ctx, s.SandboxID)
		if err != nil || got.State != StateRunning || info.State != StateRunning {
			t.Fatalf("record %s, sandbox %s (%v)", got.State, info.State, err)
		}
		if res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print y"}, nil); err != nil || res.Restarted || res.ExecutionCount != 2 {
			t.Fatalf("next call %+v %v", res, err)
		}
	})
}
