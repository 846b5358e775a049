//go:build linux

package kernel

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

// kernelPid waits (bounded) for the default context to have a live kernel.
func (e *testEnv) kernelPid(t *testing.T) int {
	t.Helper()
	e.srv.mu.Lock()
	id := e.srv.defaults[langPython]
	e.srv.mu.Unlock()
	c := e.srv.lookup(id)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		p := c.p
		c.mu.Unlock()
		if p != nil {
			return p.pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no kernel started")
	return 0
}

// TestPrewarm: the kernel starts without an execution, and the first
// execution runs in it, as its first cell, with the configured env.
func TestPrewarm(t *testing.T) {
	e := newTestEnv(t, Config{Env: []string{"GREETING=hi"}}, testTuning)
	e.srv.Prewarm()
	pid := e.kernelPid(t)
	r := e.run(t, "import os\n(os.getpid(), os.environ['GREETING'])").mustNoError(t)
	if want := "(" + strconv.Itoa(pid) + ", 'hi')"; r.mainText() != want {
		t.Fatalf("first cell ran in %s, want %s", r.mainText(), want)
	}
	if r.count() != 1 {
		t.Fatalf("execution count %d, want 1", r.count())
	}
	e.srv.Prewarm() // a kernel runs: nothing changes
	if got := e.run(t, "os.getpid()").mustNoError(t).mainText(); got != strconv.Itoa(pid) {
		t.Fatalf("second prewarm replaced the kernel: %s, want %d", got, pid)
	}
}

// TestPrewarmRacingExecute: an execution sent while the prewarm start is
// under way waits for that kernel instead of starting a second one.
func TestPrewarmRacingExecute(t *testing.T) {
	e := defaultEnv(t)
	e.srv.Prewarm()
	r := e.run(t, "import os\nos.getpid()").mustNoError(t)
	if r.count() != 1 || r.mainText() != strconv.Itoa(e.kernelPid(t)) {
		t.Fatalf("count %d, pid %s, kernel %d", r.count(), r.mainText(), e.kernelPid(t))
	}
}

// TestPrewarmThenClose: Close ends a prewarmed kernel, and a Prewarm after
// Close starts nothing.
func TestPrewarmThenClose(t *testing.T) {
	e := defaultEnv(t)
	e.srv.Prewarm()
	pid := e.kernelPid(t)
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("kernel %d after Close: kill(0) = %v", pid, err)
	}
	e.srv.Prewarm()
	if len(e.srv.contexts) != 0 {
		t.Fatalf("prewarm after Close made contexts %v", e.srv.contexts)
	}
}

// TestPrewarmFailure: a prewarm that cannot start Python leaves the error
// to the first execution, which reports it.
func TestPrewarmFailure(t *testing.T) {
	bad := newTestEnv(t, Config{Python: "/nonexistent/python3"}, testTuning)
	bad.srv.Prewarm()
	r := bad.run(t, "1")
	if er := r.err(); er == nil || er["name"] != "KernelStartError" {
		t.Fatalf("execute after failed prewarm: %v", r.lines)
	}
}
