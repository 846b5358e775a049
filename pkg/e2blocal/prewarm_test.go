//go:build linux

package e2blocal

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// kernelPids lists the sandbox's Python kernels: `python3 <kernel> <cap>`,
// where kernel is the compiled kernel the runtime binds, or "-" when it
// reads its source from stdin.
func kernelPids(rt *Runtime, id string) []int {
	want := "-"
	if rt.kernel != "" {
		want = insideKernel
	}
	var out []int
	for _, pid := range processTree(rt.lookup(id).proc.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 3 && strings.HasPrefix(args[0], "/usr/bin/python3") && args[1] == want {
			out = append(out, pid)
		}
	}
	return out
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
