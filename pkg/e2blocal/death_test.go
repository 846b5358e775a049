//go:build linux

package e2blocal

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// childRuntimeEnv makes the test binary a runtime process that creates one
// sandbox, prints its process tree and waits to be killed.
const childRuntimeEnv = "E2BLOCAL_TEST_CHILD_RUNTIME"

func runChildRuntime(dir string) int {
	ctx := context.Background()
	rt, err := Start(ctx, Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Where internet access is offered, the sandbox has it, so that its
	// slirp4netns must die with the runtime too.
	body := fmt.Sprintf(`{"templateID":"base","allow_internet_access":%t}`, rt.noNet == nil)
	req, _ := http.NewRequest("POST", rt.APIURL()+"/v2/sandboxes", strings.NewReader(body))
	req.Header.Set("X-API-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var sb sandboxBody
	_ = json.NewDecoder(resp.Body).Decode(&sb)
	resp.Body.Close()
	s := rt.lookup(sb.SandboxID)
	if s == nil {
		fmt.Fprintln(os.Stderr, "sandbox not created")
		return 1
	}
	pids := jail.ProcessTree(s.proc.Cmd.Process.Pid)
	if s.net != nil {
		pids = append(pids, jail.ProcessTree(s.net.cmd.Process.Pid)...)
	}
	_ = json.NewEncoder(os.Stdout).Encode(pids)
	select {} // killed by the test
}

// startChildRuntime runs a runtime in a child process (this test binary,
// see childRuntimeEnv) and returns it with the first line it printed: the
// pids of its sandboxes, once they run.
func startChildRuntime(t *testing.T) (*exec.Cmd, []byte) {
	t.Helper()
	e2btest.NeedsSandboxes(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childRuntimeEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child runtime: %v", err)
	}
	return cmd, line
}

func TestRuntimeDeathKillsSandboxes(t *testing.T) {
	cmd, line := startChildRuntime(t)
	var pids []int
	if err := json.Unmarshal(line, &pids); err != nil || len(pids) < 3 {
		t.Fatalf("child said %q", line)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("sandbox pid %d not running before the runtime died", pid)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	assertGone(t, pids)
}

func TestCloseKillsSandboxes(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := Start(ctx, Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for range 3 {
		sb := createSandbox(t, rt, nil)
		pids = append(pids, jail.ProcessTree(rt.lookup(sb.SandboxID).proc.Cmd.Process.Pid)...)
	}
	if err := rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, pids)
	if r, err := http.Get(rt.APIURL() + "/health"); err == nil {
		r.Body.Close()
		t.Fatal("API still serving after Close")
	}
}

// TestCloseLeavesNoGoroutines: timers, watchers, the pool filler, the
// spawner and the servers all end with Close.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := Start(ctx, Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := createSandbox(t, rt, nil)
	createSandbox(t, rt, map[string]any{"templateID": "base", "autoPause": true, "timeout": 1})
	createSandbox(t, rt, map[string]any{"templateID": "base", "allow_internet_access": rt.noNet == nil})
	mustRun(t, rt, a, "true")
	if r := api(t, rt, "POST", "/sandboxes/"+a.SandboxID+"/pause", nil); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d", r.status)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
