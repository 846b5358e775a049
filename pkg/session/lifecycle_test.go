package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestStartStopStatusTransitions(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()

	s := r.mustStart(t, ctx, testKey, StartOptions{Metadata: map[string]string{"stack": "evil", "team": "x"}})
	if s.State != StateRunning || s.SandboxID == "" || s.Template != "code-interpreter-v1" || s.Type != TypeCodeInterpreter {
		t.Fatalf("after start: %+v", s)
	}
	now := r.clock.Now()
	if !s.IdleDeadline.Equal(now.Add(30*time.Minute)) || !s.LifetimeDeadline.Equal(now.Add(2*time.Hour)) || !s.DueAt.Equal(s.IdleDeadline) {
		t.Fatalf("deadlines: idle %v lifetime %v due %v", s.IdleDeadline, s.LifetimeDeadline, s.DueAt)
	}
	spec := r.sbx.specs[0]
	if spec.Metadata[MetaStack] != "stack-test" || spec.Metadata[MetaSession] != "chat-1" || spec.Metadata["team"] != "x" {
		t.Fatalf("sandbox metadata: %v", spec.Metadata)
	}
	if spec.Timeout != 32*time.Minute {
		t.Fatalf("provider timeout %v, want idle + slack", spec.Timeout)
	}

	again, err := r.m.Start(ctx, testKey, StartOptions{})
	if err != nil || again.SandboxID != s.SandboxID {
		t.Fatalf("second start: %+v %v", again, err)
	}
	if n := r.sbx.count("Create"); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}

	st, err := r.m.Stop(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateStopped || !st.DueAt.IsZero() || st.ExpiresAt.IsZero() {
		t.Fatalf("after stop: %+v", st)
	}
	if len(r.sbx.live()) != 0 {
		t.Fatalf("sandboxes after stop: %v", r.sbx.live())
	}
	if st2, err := r.m.Stop(ctx, testKey); err != nil || st2.Version != st.Version {
		t.Fatalf("stop of stopped: %+v %v", st2, err)
	}

	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Restarted || res.Stdout != "hi\n" {
		t.Fatalf("execute after stop: %+v", res)
	}
	got, err := r.m.Status(ctx, testKey)
	if err != nil || got.State != StateRunning || got.SandboxID == s.SandboxID {
		t.Fatalf("status: %+v %v", got, err)
	}
}

func TestStatusAppliesDeadlines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		pause   bool
		advance time.Duration
		want    State
		gone    bool
	}{
		{"fresh", false, time.Minute, StateRunning, false},
		{"idle kill", false, 31 * time.Minute, StateStopped, false},
		{"idle pause", true, 31 * time.Minute, StatePaused, false},
		{"lifetime", true, 3 * time.Hour, StateStopped, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{})
			ctx := context.Background()
			r.mustStart(t, ctx, testKey, StartOptions{Pause: tt.pause})
			r.clock.Advance(tt.advance)
			s, err := r.m.Status(ctx, testKey)
			if err != nil || s.State != tt.want {
				t.Fatalf("status %+v %v, want %s", s, err, tt.want)
			}
		})
	}
	t.Run("stopped past retention is not found", func(t *testing.T) {
		r := newRig(t, Config{})
		ctx := context.Background()
		r.mustStart(t, ctx, testKey, StartOptions{})
		if _, err := r.m.Stop(ctx, testKey); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(8 * 24 * time.Hour)
		if _, err := r.m.Status(ctx, testKey); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want not found", err)
		}
	})
}

func TestConcurrentExecutesStartOneSandbox(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	r.sbx.delay = 30 * time.Millisecond
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: fmt.Sprintf("print %d", i)}, nil)
			if err == nil && (res.Restarted || res.Stdout != fmt.Sprintf("%d\n", i)) {
				err = fmt.Errorf("result %+v", res)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := r.sbx.count("Create"); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}
	if n := r.sbx.count("Execute"); n != 50 {
		t.Fatalf("executes = %d, want 50", n)
	}
}

func TestLeaseTakeover(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ctx := t.Context()
		now := r.clock.Now()
		// A start whose caller died: it holds the lease for another minute.
		r.store.put(&Session{Key: testKey, State: StateStarting, LeaseOwner: "dead", LeaseUntil: now.Add(time.Minute),
			DueAt: now.Add(time.Minute), CreatedAt: now, Version: 3})

		done := make(chan error, 1)
		go func() {
			_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
			done <- err
		}()
		// The caller waits while the lease holds...
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("execute returned while the lease was held: %v", err)
		default:
		}
		if r.sbx.count("Create") != 0 {
			t.Fatal("a sandbox was created under someone else's lease")
		}
		// ...and takes over once it expires.
		r.clock.Advance(61 * time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s := r.store.session(testKey)
		if s.State != StateRunning || s.LeaseOwner != "" || r.sbx.count("Create") != 1 {
			t.Fatalf("after takeover: %+v creates %d", s, r.sbx.count("Create"))
		}
	})
}

func TestLeaseWaitHonoursContext(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	now := r.clock.Now()
	r.store.put(&Session{Key: testKey, State: StateStarting, LeaseOwner: "other", LeaseUntil: now.Add(time.Minute), Version: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want timeout", err)
	}
}

func TestRestartWhenSandboxGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("gone before execute", func(t *testing.T) {
		r := newRig(t, Config{})
		s := r.mustStart(t, ctx, testKey, StartOptions{})
		r.sbx.vanish(s.SandboxID)
		res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print again"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Restarted || res.Stdout != "again\n" || res.ExecutionCount != 1 {
			t.Fatalf("result %+v", res)
		}
		if n := r.sbx.count("Execute"); n != 2 {
			t.Fatalf("execute calls = %d, want 2 (one failed before running)", n)
		}
		if got := r.store.session(testKey); got.SandboxID == s.SandboxID || got.State != StateRunning {
			t.Fatalf("record %+v", got)
		}
		res, err = r.m.Execute(ctx, testKey, ExecRequest{Code: "print next"}, nil)
		if err != nil || res.Restarted {
			t.Fatalf("next execute %+v %v", res, err)
		}
	})
	t.Run("gone after output is not re-sent", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{})
		r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			onEvent(Event{Stdout: "partial"})
			return nil, ErrSandboxGone
		}
		_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
		if !errors.Is(err, ErrSandboxGone) {
			t.Fatalf("err = %v", err)
		}
		if n := r.sbx.count("Execute"); n != 1 {
			t.Fatalf("code sent %d times", n)
		}
	})
	t.Run("provider unavailable is an error, not a restart", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{})
		r.sbx.fail = func(op, id string) error {
			if op == "Execute" {
				return Errorf(ErrUnavailable, "502 from provider")
			}
			return nil
		}
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if r.sbx.count("Create") != 1 {
			t.Fatal("restarted on a 5xx")
		}
	})
}

func TestResumePaused(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(31 * time.Minute)
	if rep, err := r.m.Reap(ctx); err != nil || rep.Paused != 1 {
		t.Fatalf("reap %+v %v", rep, err)
	}
	if s := r.store.session(testKey); s.State != StatePaused || !s.DueAt.Equal(s.LifetimeDeadline) {
		t.Fatalf("after reap %+v", s)
	}
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print back"}, nil)
	if err != nil || res.Restarted || res.ExecutionCount != 1 {
		t.Fatalf("execute after pause %+v %v", res, err)
	}
	s := r.store.session(testKey)
	if s.State != StateRunning || r.sbx.count("Connect") != 1 || r.sbx.count("Create") != 1 {
		t.Fatalf("after resume %+v connects %d", s, r.sbx.count("Connect"))
	}
	if !s.IdleDeadline.Equal(r.clock.Now().Add(30 * time.Minute)) {
		t.Fatalf("idle deadline not moved: %v", s.IdleDeadline)
	}
}

func TestResumeGonePausedRestarts(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	s := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(31 * time.Minute)
	if _, err := r.m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	r.sbx.vanish(s.SandboxID)
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
	if err != nil || !res.Restarted {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestExpiredLifetimeStartsFresh(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	s := r.mustStart(t, ctx, testKey, StartOptions{})
	for range 5 { // keep it active past its lifetime
		r.clock.Advance(25 * time.Minute)
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := r.store.session(testKey)
	if got.SandboxID == s.SandboxID {
		t.Fatal("sandbox outlived its lifetime")
	}
	if live := r.sbx.live(); len(live) != 1 || live[0] != got.SandboxID {
		t.Fatalf("live sandboxes %v, want only %s", live, got.SandboxID)
	}
}

func TestTenantCap(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 2})
	ctx := context.Background()
	for i := range 2 {
		k := testKey
		k.SessionID = fmt.Sprint("s", i)
		r.mustStart(t, ctx, k, StartOptions{})
	}
	other := Key{Tenant: "globex", Principal: "bob", SessionID: "s0"}
	if _, err := r.m.Start(ctx, other, StartOptions{}); err != nil {
		t.Fatalf("another tenant is capped too: %v", err)
	}
	k := testKey
	k.SessionID = "s2"
	_, err := r.m.Execute(ctx, k, ExecRequest{Code: "print x"}, nil)
	var e *Error
	if !errors.Is(err, ErrLimit) || !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("err = %v, want ErrLimit with RetryAfter", err)
	}
	if s := r.store.session(k); s.State.Live() {
		t.Fatalf("capped session left live: %+v", s)
	}
	if _, err := r.m.Stop(ctx, Key{Tenant: "acme", Principal: "alice", SessionID: "s0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Execute(ctx, k, ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatalf("after a stop: %v", err)
	}
}

// TestTenantCapHoldsUnderRacingStarts: racing starts take the tenant's
// slots before any sandbox exists, so exactly the cap's worth create one
// (all of them inside Create at once, holding their slots) and the others
// are refused before creating anything, their sessions left stopped.
func TestTenantCapHoldsUnderRacingStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{MaxLiveSandboxesPerTenant: 3})
	r.mustStart(t, ctx, testKey, StartOptions{})
	const racers = 8
	r.sbx.holdCreates(2)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			k := testKey
			k.SessionID = fmt.Sprint("race-", i)
			_, errs[i] = r.m.Start(ctx, k, StartOptions{})
		})
	}
	wg.Wait()
	started := 0
	for i, err := range errs {
		k := testKey
		k.SessionID = fmt.Sprint("race-", i)
		switch {
		case err == nil:
			started++
		case errors.Is(err, ErrLimit):
			if s := r.store.session(k); s.State != StateStopped || s.SandboxID != "" || s.Slot != "" {
				t.Errorf("capped session %s: %+v", k.SessionID, s)
			}
		default:
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if started != 2 || len(r.sbx.live()) != 3 || r.sbx.count("Create") != 3 || r.store.heldSlots("acme") != 3 {
		t.Fatalf("%d started, live %v, %d creates, %d slots: want 2 started, 3 live, 3 creates, 3 slots",
			started, r.sbx.live(), r.sbx.count("Create"), r.store.heldSlots("acme"))
	}
	if n := r.sbx.count("List"); n != 0 {
		t.Fatalf("%d provider List calls on the start path, want 0", n)
	}
}

// TestTenantCapStoreOutage: a slot that cannot be taken (the store fails)
// fails the start before any sandbox is created.
func TestTenantCapStoreOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{})
	r.store.fail = func(op string) error {
		if op == "TakeSlot" {
			return &Error{Kind: ErrUnavailable, Detail: "dynamodb throttled"}
		}
		return nil
	}
	if _, err := r.m.Start(ctx, testKey, StartOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("start with the store failing: %v, want ErrUnavailable", err)
	}
	if n := r.sbx.count("Create"); n != 0 {
		t.Fatalf("%d creates without a slot", n)
	}
	if s := r.store.session(testKey); s.State.Live() || s.Slot != "" {
		t.Fatalf("session after the failed start: %+v", s)
	}
	r.store.fail = nil
	r.mustStart(t, ctx, testKey, StartOptions{})
	if n := r.store.heldSlots("acme"); n != 1 {
		t.Fatalf("%d slots held, want 1", n)
	}
}

func TestStoreFailureMidStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	// The write that records the new sandbox fails: the sandbox must not
	// survive, and the session must be usable afterwards.
	var once sync.Once
	r.store.fail = func(op string) error {
		var err error
		if op == "UpdateSession" {
			once.Do(func() { err = errors.New("dynamodb: 500 internal error") })
		}
		return err
	}
	// CreateSession is the first write; the failing UpdateSession is the
	// one recording the sandbox.
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err == nil {
		t.Fatal("expected an error")
	}
	if live := r.sbx.live(); len(live) != 0 {
		t.Fatalf("orphaned sandboxes %v", live)
	}
	r.clock.Advance(2 * time.Minute) // the failed start's lease runs out
	res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil)
	if err != nil || res.Stdout != "x\n" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestProviderFailureOnCreate(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.sbx.fail = func(op, id string) error {
		if op == "Create" {
			return Errorf(ErrUnavailable, "provider answered 503")
		}
		return nil
	}
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if s := r.store.session(testKey); s.State != StateError || !s.DueAt.IsZero() {
		t.Fatalf("record %+v", s)
	}
	r.sbx.fail = nil
	if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print x"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestStopDuringStartKillsTheNewSandbox(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	created := make(chan struct{})
	release := make(chan struct{})
	r.sbx.fail = func(op, id string) error {
		if op == "Create" && r.sbx.count("Create") == 1 {
			close(created)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.m.Start(ctx, testKey, StartOptions{})
		done <- err
	}()
	<-created
	if _, err := r.m.Stop(ctx, testKey); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The start lost its lease to the stop, killed its sandbox and started
	// again: exactly one sandbox runs, and the record names it.
	s := r.store.session(testKey)
	if live := r.sbx.live(); len(live) != 1 || live[0] != s.SandboxID || s.State != StateRunning {
		t.Fatalf("live %v record %+v", live, s)
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	for i := range 5 {
		k := testKey
		k.SessionID = fmt.Sprintf("s%d", i)
		r.mustStart(t, ctx, k, StartOptions{})
	}
	r.mustStart(t, ctx, Key{Tenant: "acme", Principal: "bob", SessionID: "b"}, StartOptions{})
	var ids []string
	cursor := ""
	for {
		page, next, err := r.m.List(ctx, "acme", "alice", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			ids = append(ids, s.SessionID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(ids) != "[s0 s1 s2 s3 s4]" {
		t.Fatalf("ids %v", ids)
	}
	if _, _, err := r.m.List(ctx, "acme", "alice", 101, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("limit 101: %v", err)
	}
}

func TestStartResumesPaused(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	first := r.mustStart(t, ctx, testKey, StartOptions{Pause: true})
	r.clock.Advance(31 * time.Minute)
	if rep, _ := r.m.Reap(ctx); rep.Paused != 1 {
		t.Fatalf("%+v", rep)
	}
	s, err := r.m.Start(ctx, testKey, StartOptions{Pause: true})
	if err != nil || s.State != StateRunning || s.SandboxID != first.SandboxID || r.sbx.count("Connect") != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	if got := r.sbx.timeout[s.SandboxID]; got != 32*time.Minute {
		t.Fatalf("provider timeout on resume %v", got)
	}
}

func TestStopFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		storeFail func(n int, op string) error // n counts UpdateSession calls during the stop
		sbxFail   func(op, id string) error
		kind      error
	}{
		{"provider 5xx on kill", nil, func(op, id string) error {
			if op == "Kill" {
				return Errorf(ErrUnavailable, "provider 502")
			}
			return nil
		}, ErrUnavailable},
		{"store fails after the kill", func(n int, op string) error {
			if op == "UpdateSession" && n == 2 {
				return errors.New("dynamodb: 500")
			}
			return nil
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Config{})
			ctx := context.Background()
			r.mustStart(t, ctx, testKey, StartOptions{})
			var mu sync.Mutex
			n := 0
			if tt.storeFail != nil {
				r.store.fail = func(op string) error {
					mu.Lock()
					defer mu.Unlock()
					if op == "UpdateSession" {
						n++
					}
					return tt.storeFail(n, op)
				}
			}
			r.sbx.fail = tt.sbxFail
			_, err := r.m.Stop(ctx, testKey)
			if err == nil || (tt.kind != nil && !errors.Is(err, tt.kind)) {
				t.Fatalf("err = %v", err)
			}
			s := r.store.session(testKey)
			if s.State != StateStopping || s.DueAt.IsZero() {
				t.Fatalf("record after a failed stop %+v", s)
			}
			// Once the faults clear and the stop's lease runs out, the reaper
			// finishes it: no sandbox left, record stopped.
			r.store.fail, r.sbx.fail = nil, nil
			r.clock.Advance(2 * time.Minute)
			if rep, err := r.m.Reap(ctx); err != nil || rep.Killed != 1 {
				t.Fatalf("%+v %v", rep, err)
			}
			if s := r.store.session(testKey); s.State != StateStopped || len(r.sbx.live()) != 0 {
				t.Fatalf("%+v live %v", s, r.sbx.live())
			}
		})
	}
}

func TestConcurrentExecutesDuringProviderOutage(t *testing.T) {
	t.Parallel()
	// In a synctest bubble: the failing Create is held until every other
	// caller is blocked waiting on the start lease, so the outcome does not
	// depend on how fast the machine is.
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		gate := make(chan struct{})
		r.sbx.fail = func(op, id string) error {
			if op == "Create" {
				<-gate // the provider takes a while to fail
				return Errorf(ErrUnavailable, "provider 503")
			}
			return nil
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if _, err := r.m.Execute(t.Context(), testKey, ExecRequest{Code: "print x"}, nil); !errors.Is(err, ErrUnavailable) {
					t.Errorf("err = %v", err)
				}
			})
		}
		synctest.Wait() // one caller in Create, nine waiting on its lease
		if n := r.sbx.count("Create"); n != 1 {
			t.Fatalf("creates while the first start holds the lease: %d", n)
		}
		close(gate)
		wg.Wait()
		// Callers that waited on the failing start report it instead of
		// each trying again.
		if n := r.sbx.count("Create"); n != 1 {
			t.Fatalf("creates during an outage: %d", n)
		}
	})
}

func TestStopFinishesWhenTheCallerHangsUp(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	if _, err := r.m.Start(context.Background(), testKey, StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// The client goes away right after the session was marked stopping: the
	// kill and the final write must still happen.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	r.store.fail = func(op string) error {
		if op == "UpdateSession" {
			once.Do(cancel)
		}
		return nil
	}
	s, err := r.m.Stop(ctx, testKey)
	if err != nil || s.State != StateStopped {
		t.Fatalf("stop %+v %v", s, err)
	}
	if live := r.sbx.live(); len(live) != 0 {
		t.Fatalf("sandbox left running after the caller hung up: %v", live)
	}
	if got := r.store.session(testKey); got.State != StateStopped {
		t.Fatalf("record %+v", got)
	}
}
