package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSubmitRunIdempotency(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	req := RunRequest{Code: "print x", IdempotencyKey: "order-42"}
	first, err := r.m.SubmitRun(ctx, testKey, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != RunQueued || first.ID != RunID("acme", "alice", "order-42") {
		t.Fatalf("run %+v", first)
	}
	again, err := r.m.SubmitRun(ctx, testKey, req)
	if err != nil || again.ID != first.ID {
		t.Fatalf("repeat %+v %v", again, err)
	}
	// The queued run is re-published (the first publish may have been lost);
	// the worker runs it once either way.
	if len(r.bus.requested) != 2 || r.bus.requested[1].RunID != first.ID {
		t.Fatalf("published %+v", r.bus.requested)
	}
	if _, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: "print other", IdempotencyKey: "order-42"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("same key, other code: %v", err)
	}
	bob := testKey
	bob.Principal = "bob"
	theirs, err := r.m.SubmitRun(ctx, bob, req)
	if err != nil || theirs.ID == first.ID {
		t.Fatalf("another principal's key collides: %+v %v", theirs, err)
	}
	plain, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: "print x"})
	if err != nil || plain.ID == first.ID {
		t.Fatalf("no key: %+v %v", plain, err)
	}
}

func TestSubmitRunPublishFailure(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.bus.fail = errors.New("eventbridge: throttled")
	if _, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: "print x", IdempotencyKey: "k"}); err == nil {
		t.Fatal("expected an error")
	}
	r.bus.fail = nil
	run, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: "print x", IdempotencyKey: "k"})
	if err != nil || run.Status != RunQueued || len(r.bus.requested) != 1 {
		t.Fatalf("retry %+v %v %d", run, err, len(r.bus.requested))
	}
}

func TestProcessRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	run, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: "print hello", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	ev := r.bus.requested[0]
	done, err := r.m.ProcessRun(ctx, ev)
	if err != nil || done.Status != RunSucceeded || done.Result == nil || done.Result.Stdout != "hello\n" {
		t.Fatalf("processed %+v %v", done, err)
	}
	got, err := r.m.GetRun(ctx, "acme", "alice", run.ID)
	if err != nil || got.Status != RunSucceeded || got.FinishedAt.IsZero() {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := r.m.GetRun(ctx, "acme", "bob", run.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another principal's run: %v", err)
	}
	if len(r.bus.completed) != 1 || r.bus.completed[0].Status != RunSucceeded || r.bus.completed[0].Result.Stdout != "hello\n" {
		t.Fatalf("completed %+v", r.bus.completed)
	}
	// A second delivery of the same event does nothing.
	again, err := r.m.ProcessRun(ctx, ev)
	if err != nil || again.Status != RunSucceeded || r.sbx.count("Execute") != 1 || len(r.bus.completed) != 1 {
		t.Fatalf("redelivery %+v %v executes %d", again, err, r.sbx.count("Execute"))
	}
}

func TestProcessRunConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	ev := RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "run-ext-1"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			// A delivery that finds the run in progress says so (to be
			// retried); every other one succeeds.
			if _, err := r.m.ProcessRun(ctx, ev); err != nil && !errors.Is(err, ErrConflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := r.sbx.count("Execute"); n != 1 {
		t.Fatalf("executed %d times", n)
	}
	got, err := r.m.GetRun(ctx, "acme", "alice", "run-ext-1")
	if err != nil || got.Status != RunSucceeded {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestProcessRunOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("code that raises is a failed run, not an error", func(t *testing.T) {
		r := newRig(t, Config{})
		run, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "fail"})
		if err != nil || run.Status != RunFailed || run.Result == nil || run.Error != "ValueError: boom" {
			t.Fatalf("%+v %v", run, err)
		}
	})
	t.Run("provider failure is returned for the dead-letter queue", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.fail = func(op, id string) error {
			if op == "Create" {
				return Errorf(ErrUnavailable, "provider 503")
			}
			return nil
		}
		run, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "r1"})
		if !errors.Is(err, ErrUnavailable) || run == nil || run.Status != RunFailed || run.Error == "" {
			t.Fatalf("%+v %v", run, err)
		}
		if len(r.bus.completed) != 1 || r.bus.completed[0].Status != RunFailed {
			t.Fatalf("completed %+v", r.bus.completed)
		}
	})
	t.Run("the run's error names no internals", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.fail = func(op, id string) error {
			if op == "Create" {
				return fmt.Errorf("put object workspaces/acme/alice/s/manifest.json in /var/lib/sessionbox/data: %w",
					&Error{Kind: ErrUnavailable, Detail: "the sandbox provider is unavailable; try again"})
			}
			if op == "Execute" {
				return errors.New("read /var/lib/sessionbox/data/runtime/homes/x: broken")
			}
			return nil
		}
		run, _ := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "r2"})
		if run == nil || run.Status != RunFailed || run.Error != "the sandbox provider is unavailable; try again" {
			t.Fatalf("%+v", run)
		}
	})
	t.Run("bad event is returned", func(t *testing.T) {
		r := newRig(t, Config{})
		if _, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "../x", Code: "print x"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("another tenant's run is refused and leaves no record", func(t *testing.T) {
		r := newRig(t, Config{})
		_, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "other-tenant", Principal: "alice", SessionID: "s", Code: "print x", RunID: "foreign"})
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), `"other-tenant"`) {
			t.Fatalf("err = %v", err)
		}
		if _, err := r.store.GetRun(ctx, "foreign"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("run record: %v", err)
		}
		if n := r.sbx.count("Create") + r.sbx.count("Execute"); n != 0 || len(r.bus.completed) != 0 {
			t.Fatalf("%d sandbox calls, %d completions", n, len(r.bus.completed))
		}
	})
	t.Run("a result that cannot be saved fails the run at once", func(t *testing.T) {
		r := newRig(t, Config{})
		r.blobs.failPut = Errorf(ErrUnavailable, "s3 down")
		big := strings.Repeat("y", 150<<10)
		r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			return &ExecResult{Success: true, Stdout: big, Stderr: big}, nil
		}
		_, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "x", RunID: "lost"})
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		got, err := r.m.GetRun(ctx, "acme", "alice", "lost")
		if err != nil || got.Status != RunFailed || !strings.Contains(got.Error, "result could not be saved") ||
			got.ResultKey != "" || got.Result != nil || strings.Contains(got.Error, "s3 down") {
			t.Fatalf("%+v %v", got, err)
		}
		if len(r.bus.completed) != 1 || r.bus.completed[0].Status != RunFailed {
			t.Fatalf("completed %+v", r.bus.completed)
		}
	})
	t.Run("large result goes to blobs", func(t *testing.T) {
		r := newRig(t, Config{})
		big := strings.Repeat("y", 150<<10)
		r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			return &ExecResult{Success: true, Stdout: big, Stderr: big, Results: []Result{{Text: big, IsMainResult: true}}}, nil
		}
		run, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "x", RunID: "big"})
		if err != nil || run.Result != nil || run.ResultKey != "runs/big/result.json" {
			t.Fatalf("%+v %v", run, err)
		}
		body, ok := r.blobs.object(run.ResultKey)
		var res ExecResult
		if !ok || json.Unmarshal(body, &res) != nil || res.Results[0].Text != big {
			t.Fatal("stored result unreadable")
		}
		if c := r.bus.completed[0]; c.ResultKey != run.ResultKey || c.Result != nil {
			t.Fatalf("completed %+v", c)
		}
	})
	t.Run("stale running run is failed, not run again", func(t *testing.T) {
		r := newRig(t, Config{})
		now := r.clock.Now()
		if err := r.store.CreateRun(ctx, &Run{ID: "stale", Key: Key{Tenant: "acme", Principal: "alice", SessionID: "s"},
			Status: RunRunning, Code: "print x", StartedAt: now}); err != nil {
			t.Fatal(err)
		}
		ev := RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "stale"}
		// Another delivery has it: not run again, and not reported done
		// either, so the event comes back later.
		run, err := r.m.ProcessRun(ctx, ev)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrConflict || e.RetryAfter <= 0 || run.Status != RunRunning {
			t.Fatalf("fresh running: %+v %v", run, err)
		}
		r.clock.Advance(10 * time.Minute)
		// Readers see what the next delivery will record.
		if got, err := r.m.GetRun(ctx, "acme", "alice", "stale"); err != nil || got.Status != RunFailed || got.Error == "" {
			t.Fatalf("read of a stale run: %+v %v", got, err)
		}
		run, err = r.m.ProcessRun(ctx, ev)
		if !errors.Is(err, ErrTimeout) || run.Status != RunFailed || r.sbx.count("Execute") != 0 {
			t.Fatalf("stale: %+v %v", run, err)
		}
		if stored, _ := r.store.GetRun(ctx, "stale"); stored.Status != RunFailed {
			t.Fatalf("stored %+v", stored)
		}
		// Once failed, a further delivery finds it finished.
		if run, err := r.m.ProcessRun(ctx, ev); err != nil || run.Status != RunFailed {
			t.Fatalf("after failure: %+v %v", run, err)
		}
	})
	t.Run("a repeated request sees a stale run as failed, like a read", func(t *testing.T) {
		r := newRig(t, Config{})
		req := RunRequest{Code: "print x", IdempotencyKey: "k-stale"}
		run, err := r.m.SubmitRun(ctx, testKey, req)
		if err != nil {
			t.Fatal(err)
		}
		run.Status, run.StartedAt = RunRunning, r.clock.Now()
		if err := r.store.UpdateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(10 * time.Minute)
		again, err := r.m.SubmitRun(ctx, testKey, req)
		if err != nil || again.Status != RunFailed || again.Error == "" {
			t.Fatalf("%+v %v", again, err)
		}
	})
	t.Run("exception text is cut for the record", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			return &ExecResult{Error: &ExecError{Name: "ValueError", Value: strings.Repeat("v", 16<<10)}}, nil
		}
		run, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "x", RunID: "loud"})
		if err != nil || run.Status != RunFailed || len(run.Error) > maxRunErrorBytes || !strings.HasPrefix(run.Error, "ValueError: vvv") {
			t.Fatalf("%d bytes of error, %v", len(run.Error), err)
		}
	})
	t.Run("a record the store refuses as too large is stored failed", func(t *testing.T) {
		r := newRig(t, Config{})
		var once sync.Once
		r.store.fail = func(op string) error {
			var err error
			if op == "UpdateRun" {
				once.Do(func() { err = Errorf(ErrTooLarge, "item size has exceeded the maximum allowed size") })
			}
			return err
		}
		ev := RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "fat"}
		run, err := r.m.ProcessRun(ctx, ev)
		if !errors.Is(err, ErrTooLarge) || run.Status != RunFailed {
			t.Fatalf("%+v %v", run, err)
		}
		stored, _ := r.store.GetRun(ctx, "fat")
		if stored.Status != RunFailed || stored.Result != nil || !strings.Contains(stored.Error, "too large") {
			t.Fatalf("stored %+v", stored)
		}
		if len(r.bus.completed) != 1 || r.bus.completed[0].Status != RunFailed {
			t.Fatalf("completed %+v", r.bus.completed)
		}
		// A redelivery finds it finished instead of running forever.
		if again, err := r.m.ProcessRun(ctx, ev); err != nil || again.Status != RunFailed || r.sbx.count("Execute") != 1 {
			t.Fatalf("redelivery %+v %v", again, err)
		}
	})
	t.Run("run id of another session", func(t *testing.T) {
		r := newRig(t, Config{})
		if _, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "print x", RunID: "r"}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "bob", SessionID: "s", Code: "print x", RunID: "r"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRunSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("code size is counted as it travels in the event", func(t *testing.T) {
		tests := []struct {
			name string
			code string
			kind error
		}{
			{"plain at the limit", strings.Repeat("x", maxRunCodeBytes), nil},
			{"plain past the limit", strings.Repeat("x", maxRunCodeBytes+1), ErrTooLarge},
			// JSON encodes <, > and & as \u003c..., six bytes each.
			{"comparisons grow sixfold", strings.Repeat("<", maxRunCodeBytes/6+1), ErrTooLarge},
			{"newlines grow twofold", strings.Repeat("\n", maxRunCodeBytes/2+1), ErrTooLarge},
			{"escaped within the limit", strings.Repeat("a<b\n", maxRunCodeBytes/12), nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := newRig(t, Config{})
				_, err := r.m.SubmitRun(ctx, testKey, RunRequest{Code: tt.code})
				if tt.kind == nil && err != nil || tt.kind != nil && !errors.Is(err, tt.kind) {
					t.Fatalf("err = %v, want %v", err, tt.kind)
				}
				if tt.kind != nil {
					return
				}
				// What the bus sends must fit EventBridge's 256 KB entry.
				if n := jsonSize(r.bus.requested[0]); n > 256<<10-1024 {
					t.Fatalf("event detail of %d bytes", n)
				}
			})
		}
	})
	t.Run("mid-size result kept in the record, left out of the event", func(t *testing.T) {
		r := newRig(t, Config{})
		out := strings.Repeat("z", 100<<10)
		r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			return &ExecResult{Success: true, Stdout: out}, nil
		}
		run, err := r.m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: "x", RunID: "mid"})
		if err != nil || run.Result == nil || run.Result.Stdout != out || run.ResultKey != "" {
			t.Fatalf("%v %v", run.ResultKey, err)
		}
		if c := r.bus.completed[0]; c.Result != nil || c.Status != RunSucceeded {
			t.Fatalf("event carries a 100 KB result")
		}
	})
	t.Run("without blobs a large result is cut to fit", func(t *testing.T) {
		clock := newFakeClock()
		sbx := newFakeSandboxes(clock)
		st := newFakeStore(clock)
		bus := &fakeBus{}
		m, err := NewManager(Config{Tenant: "acme"}, Deps{Store: st, Sandboxes: sbx, Bus: bus, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("q", 1<<20)
		sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
			rs := make([]Result, 100)
			for i := range rs {
				rs[i] = Result{Text: big[:5000], PNG: big[:50000]}
			}
			return &ExecResult{Success: true, Stdout: big, Stderr: big, Results: rs}, nil
		}
		code := strings.Repeat("#", 100<<10)
		run, err := m.ProcessRun(ctx, RunRequested{Tenant: "acme", Principal: "alice", SessionID: "s", Code: code, RunID: "huge"})
		if err != nil || run.Result == nil || !run.Result.Truncated {
			t.Fatalf("%+v %v", run, err)
		}
		if size := jsonSize(run.Result) + len(run.Code); size > 300<<10 {
			t.Fatalf("record would hold %d bytes", size)
		}
	})
}
