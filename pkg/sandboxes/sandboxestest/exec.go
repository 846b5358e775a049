package sandboxestest

import (
	"strings"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// mustExec executes code in the default context and fails the test on an
// error or an exception.
func mustExec(t *testing.T, env Env, id, code string) *session.ExecResult {
	t.Helper()
	return mustExecIn(t, env, id, "", code)
}

func mustExecIn(t *testing.T, env Env, id, contextID, code string) *session.ExecResult {
	t.Helper()
	res, err := env.Sandboxes.Execute(t.Context(), id, session.ExecRequest{Code: code, Context: contextID}, nil)
	if err != nil {
		t.Fatalf("Execute(%q): %v", code, err)
	}
	if !res.Success || res.Error != nil {
		t.Fatalf("Execute(%q) failed: %+v", code, res.Error)
	}
	return res
}

// testExecute: output comes back in the result and live, in order; an
// exception is a result that says so, not an error.
func testExecute(t *testing.T, env Env) {
	info, _ := newSandbox(t, env)
	var mu sync.Mutex
	var live strings.Builder
	code := env.Code.Print("one") + "\n" + env.Code.Print("two")
	res, err := env.Sandboxes.Execute(t.Context(), info.ID, session.ExecRequest{Code: code}, func(e session.Event) {
		mu.Lock()
		defer mu.Unlock()
		live.WriteString(e.Stdout)
	})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if !res.Success || res.Stdout != "one\ntwo\n" || res.TimedOut {
		t.Fatalf("result %+v, want success printing one and two", res)
	}
	mu.Lock()
	if live.String() != "one\ntwo\n" {
		t.Errorf("live output %q, want %q", live.String(), "one\ntwo\n")
	}
	mu.Unlock()

	res, err = env.Sandboxes.Execute(t.Context(), info.ID, session.ExecRequest{Code: env.Code.Raise}, nil)
	if err != nil {
		t.Fatalf("Execute of raising code: %v, want a result", err)
	}
	if res.Success || res.Error == nil || res.Error.Name == "" {
		t.Fatalf("raising code gave %+v, want a failed result naming the exception", res)
	}
}

// testExecuteState: the kernel keeps variables between executions; a
// reset forgets them and keeps the files.
func testExecuteState(t *testing.T, env Env) {
	info, _ := newSandbox(t, env)
	ctx := t.Context()
	mustExec(t, env, info.ID, env.Code.Set("greeting", "hello"))
	if res := mustExec(t, env, info.ID, env.Code.Get("greeting")); res.Stdout != "hello\n" {
		t.Fatalf("the kernel forgot a variable: printed %q", res.Stdout)
	}
	path := env.Dir + "/state/kept.txt"
	must(t, "WriteFile", env.Sandboxes.WriteFile(ctx, info.ID, path, strings.NewReader("kept")))
	must(t, "ResetKernel", env.Sandboxes.ResetKernel(ctx, info.ID))
	res, err := env.Sandboxes.Execute(ctx, info.ID, session.ExecRequest{Code: env.Code.Get("greeting")}, nil)
	if err != nil || res.Success || res.Error == nil {
		t.Fatalf("after a reset the variable is still there: %+v, %v", res, err)
	}
	if got := readAll(t, env, info.ID, path); got != "kept" {
		t.Fatalf("after a reset the file reads %q, want %q", got, "kept")
	}
}

// testExecuteTimeout: code running past its timeout is stopped, and the
// result says so.
func testExecuteTimeout(t *testing.T, env Env) {
	info, _ := newSandbox(t, env)
	res, err := env.Sandboxes.Execute(t.Context(), info.ID, session.ExecRequest{Code: env.Code.Sleep(60), TimeoutSecs: 1}, nil)
	if err != nil {
		t.Fatalf("Execute past its timeout: %v, want a result", err)
	}
	if !res.TimedOut {
		t.Fatalf("result %+v, want TimedOut", res)
	}
}
