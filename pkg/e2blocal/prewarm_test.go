//go:build linux

package e2blocal

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// kernelPids lists the sandbox's Python kernels: `python3 <kernel> <cap>`,
// where kernel is the compiled kernel the runtime binds, or "-" when it
// reads its source from stdin.
func kernelPids(rt *Runtime, id string) []int {
	var out []int
	for _, pid := range jail.ProcessTree(rt.lookup(id).proc.Cmd.Process.Pid) {
		if isKernel(rt, pid) {
			out = append(out, pid)
		}
	}
	return out
}

func isKernel(rt *Runtime, pid int) bool {
	want := "-"
	if rt.kernel != "" {
		want = jail.InsideKernel
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return len(args) == 3 && strings.HasPrefix(args[0], "/usr/bin/python3") && args[1] == want
}

// TestPrewarmedKernel: a code-interpreter sandbox has its kernel running
// before any code is sent, with the sandbox's env vars, and the first cell
// runs in it; a base sandbox starts no Python until asked.
func TestPrewarmedKernel(t *testing.T) {
	rt := startRuntime(t, Config{})
	if rt.kernel == "" {
		t.Fatal("the runtime did not compile the kernel")
	}
	ci := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1", "envVars": map[string]string{"STAGE": "warm"}})
	base := createSandbox(t, rt, map[string]any{"templateID": "base"})
	var pids []int
	for deadline := time.Now().Add(20 * time.Second); len(pids) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no kernel started in the code-interpreter sandbox")
		}
		time.Sleep(10 * time.Millisecond)
		pids = kernelPids(rt, ci.SandboxID)
	}
	if len(pids) != 1 {
		t.Fatalf("kernels %v, want one", pids)
	}
	mustRun(t, rt, base, "true")
	if got := kernelPids(rt, base.SandboxID); len(got) != 0 {
		t.Fatalf("base sandbox runs kernels %v before any code", got)
	}
	out := execute(t, rt, ci, "import os\n(os.getpid(), os.environ.get('STAGE'))")
	// The kernel's own pid namespace numbers it differently; its env and
	// execution count show the first cell ran in the prewarmed kernel.
	if !strings.Contains(out, `'warm')`) || !strings.Contains(out, `"execution_count":1`) {
		t.Fatalf("first cell: %s", out)
	}
	if got := kernelPids(rt, ci.SandboxID); len(got) != 1 || got[0] != pids[0] {
		t.Fatalf("kernels after the first cell %v, want %v", got, pids)
	}
}

// TestPooledStandbyKernel: a tree waiting in the warm pool has its kernel
// up already, and a code-interpreter sandbox made from it runs its first
// cell in that kernel, with the sandbox's env vars set in it (in the
// kernel and in what it starts).
func TestPooledStandbyKernel(t *testing.T) {
	rt := startRuntime(t, Config{WarmPool: 2})
	var pooled []int
	for deadline := time.Now().Add(20 * time.Second); len(pooled) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("pool kernels %v, want 2", pooled)
		}
		time.Sleep(10 * time.Millisecond)
		pooled = kernelPidsUnder(rt, os.Getpid())
	}
	ci := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1", "envVars": map[string]string{"STAGE": "pooled"}})
	got := kernelPids(rt, ci.SandboxID)
	if len(got) != 1 || !slices.Contains(pooled, got[0]) {
		t.Fatalf("sandbox kernels %v, want one of the pool's %v", got, pooled)
	}
	out := execute(t, rt, ci, "import os, subprocess\n(os.environ.get('STAGE'), subprocess.check_output(['sh', '-c', 'echo -n $STAGE']).decode())")
	if !strings.Contains(out, `('pooled', 'pooled')`) || !strings.Contains(out, `"execution_count":1`) {
		t.Fatalf("first cell: %s", out)
	}
	if after := kernelPids(rt, ci.SandboxID); len(after) != 1 || after[0] != got[0] {
		t.Fatalf("kernels after the first cell %v, want %v", after, got)
	}
}

// kernelPidsUnder lists the kernels anywhere below pid.
func kernelPidsUnder(rt *Runtime, pid int) []int {
	var out []int
	for _, p := range jail.ProcessTree(pid) {
		if isKernel(rt, p) {
			out = append(out, p)
		}
	}
	return out
}
