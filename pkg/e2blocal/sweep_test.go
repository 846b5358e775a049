//go:build linux

package e2blocal

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestSweepBringsBackEscapedTasks: the create's cgroup safety net puts
// back the agent and, once it had to, what the agent started (its kernel),
// when they were moved out of the sandbox's groups.
func TestSweepBringsBackEscapedTasks(t *testing.T) {
	rt := startRuntime(t, Config{})
	if rt.cgroups == nil {
		t.Fatal("a root runtime must manage cgroups here")
	}
	sb := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1"})
	s := rt.lookup(sb.SandboxID)
	g, ok := s.cg.(*jail.V1Group)
	if !ok {
		t.Skip("moving a task out of its group needs the v1 hierarchies this host has; v2 refuses tasks in the parent")
	}
	agent, kernel := treeMember(t, s, "agent"), treeMember(t, s, "python")
	for _, pid := range []int{agent, kernel} {
		for _, dir := range g.Home {
			if err := jail.WriteFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				t.Fatalf("move %d out: %v", pid, err)
			}
		}
		if inGroup(s, pid) {
			t.Fatalf("pid %d still in the sandbox's groups after the move", pid)
		}
	}
	s.sweepIntoCgroup()
	for _, pid := range []int{agent, kernel} {
		if !inGroup(s, pid) {
			t.Fatalf("pid %d not back in the sandbox's groups", pid)
		}
	}
	if out := execute(t, rt, sb, "1 + 1"); !strings.Contains(out, `"2"`) {
		t.Fatalf("execute after the sweep: %s", out)
	}
}

// treeMember waits for the process of s's tree whose name starts with
// prefix and returns its pid.
func treeMember(t *testing.T, s *sandbox, prefix string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range jail.ProcessTree(s.proc.Cmd.Process.Pid) {
			if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.HasPrefix(string(comm), prefix) {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s in sandbox %s's tree", prefix, s.id)
	return 0
}

// inGroup says whether pid is in every one of s's groups.
func inGroup(s *sandbox, pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && strings.Count(string(data), "/"+s.hostKey+"\n") >= s.cg.Controllers()
}
