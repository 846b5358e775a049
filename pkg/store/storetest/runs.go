package storetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func result(stdoutBytes int) *session.ExecResult {
	return &session.ExecResult{
		Success: true, Stdout: strings.Repeat("x", stdoutBytes), Stderr: "warn\n",
		Results: []session.Result{{
			Text: "42", HTML: "<b>42</b>", IsMainResult: true,
			JSON: map[string]any{"a": 1.5, "b": []any{"c"}},
		}},
		Error:          &session.ExecError{Name: "ValueError", Value: "bad", Traceback: "tb"},
		ExecutionCount: 3, DurationMs: 17, Truncated: true,
		Artifacts: []session.Artifact{{Path: "/home/user/out.png", SizeBytes: 10, MimeType: "image/png"}},
	}
}

func testRuns(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	now := clock.Now()
	r := &session.Run{
		ID: "run-1", Key: key("alice", "s1"), Status: session.RunQueued,
		Code: "print(1)", TimeoutSecs: 60, IdempotencyKey: "idem-1",
		CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour),
	}
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	if r.Version != 1 {
		t.Fatalf("version after create = %d", r.Version)
	}
	dup := *r
	dup.Code = "print(2)"
	wantErr(t, "second create with the same id", st.CreateRun(ctx, &dup), session.ErrConflict)
	if got := mustGetRun(t, st, r.ID); got.Code != "print(1)" {
		t.Fatalf("duplicate create overwrote the run: code %q", got.Code)
	}

	r.Status, r.StartedAt = session.RunRunning, now.Add(time.Second)
	if err := st.UpdateRun(ctx, r); err != nil {
		t.Fatalf("UpdateRun running: %v", err)
	}
	r.Status, r.FinishedAt, r.Result = session.RunSucceeded, now.Add(2*time.Second), result(1000)
	if err := st.UpdateRun(ctx, r); err != nil {
		t.Fatalf("UpdateRun succeeded: %v", err)
	}
	if r.Version != 3 {
		t.Fatalf("version after two updates = %d", r.Version)
	}
	if got := mustGetRun(t, st, r.ID); !reflect.DeepEqual(got, r) {
		t.Fatalf("run round trip:\n got %+v\nwant %+v", got, r)
	}
	stale := *r
	stale.Version, stale.Status = 2, session.RunFailed
	wantErr(t, "stale run update", st.UpdateRun(ctx, &stale), session.ErrConflict)

	_, err := st.GetRun(ctx, "no-such-run")
	wantErr(t, "get unknown run", err, session.ErrNotFound)
}

func mustGetRun(t *testing.T, st session.Store, id string) *session.Run {
	t.Helper()
	r, err := st.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return r
}

// testRunTooLarge checks the 400 KB item limit: results that fit are kept
// inline, bigger ones are refused with ErrTooLarge (the caller then stores
// the result as a blob and sets ResultKey) and change nothing.
func testRunTooLarge(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	r := &session.Run{ID: "run-big", Key: key("alice", "s1"), Status: session.RunQueued, Result: result(500 << 10)}
	wantErr(t, "create with a 500 KB result", st.CreateRun(ctx, r), session.ErrTooLarge)
	_, err := st.GetRun(ctx, r.ID)
	wantErr(t, "get after refused create", err, session.ErrNotFound)

	r.Result = result(300 << 10)
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatalf("create with a 300 KB result: %v", err)
	}
	if got := mustGetRun(t, st, r.ID); len(got.Result.Stdout) != 300<<10 {
		t.Fatalf("stored stdout of %d bytes", len(got.Result.Stdout))
	}
	r.Result = result(401 << 10)
	wantErr(t, "update with a 401 KB result", st.UpdateRun(ctx, r), session.ErrTooLarge)
	r.Result, r.ResultKey = nil, "results/run-big.json"
	if err := st.UpdateRun(ctx, r); err != nil {
		t.Fatalf("update with the result moved to a blob: %v", err)
	}
	if got := mustGetRun(t, st, r.ID); got.Result != nil || got.ResultKey != r.ResultKey || got.Version != 2 {
		t.Fatalf("after moving the result: result %v key %q version %d", got.Result != nil, got.ResultKey, got.Version)
	}
}
