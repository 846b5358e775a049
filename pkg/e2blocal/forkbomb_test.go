//go:build linux

package e2blocal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// TestForkBombDefusedByNextCall: a fork bomb left running (no timeout)
// holds its sandbox at the task limit; the sandbox's next request kills
// it, runs, and the group is back to a few tasks: the sandbox is usable
// and nothing keeps burning.
func TestForkBombDefusedByNextCall(t *testing.T) {
	rt := startRuntime(t, Config{Pids: 64})
	if rt.cgroups == nil {
		t.Skip("no cgroups here: the task limit is RLIMIT_NPROC, with no count to watch")
	}
	sb := createSandbox(t, rt, nil)
	s := rt.lookup(sb.SandboxID)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	bomb := make(chan cmdResult, 1)
	go func() { bomb <- runIn(ctx, rt, sb, `bash -c 'b() { b | b & }; b; sleep 600' 2>/dev/null`) }()
	testwait.Until(t, 30*time.Second, func() error {
		current, limit, refused, err := s.cg.Tasks()
		if err != nil {
			t.Fatal(err)
		}
		if refused == 0 || current < limit-4 {
			return fmt.Errorf("the bomb did not reach the limit: %d of %d tasks, %d forks refused", current, limit, refused)
		}
		return nil
	})
	if got := strings.TrimSpace(mustRun(t, rt, sb, "echo fine")); got != "fine" {
		t.Fatalf("the call after the bomb: %q", got)
	}
	// Only the tree's own processes are left (the agent's threads count
	// as tasks, so processes are what is counted).
	testwait.Until(t, 10*time.Second, func() error {
		pids, err := s.cg.Procs()
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) > len(s.treePids) {
			return fmt.Errorf("%d processes left in the sandbox after the call, %d of them its own", len(pids), len(s.treePids))
		}
		return nil
	})
	select {
	case <-bomb:
	case <-time.After(10 * time.Second):
		t.Fatal("the bomb's command did not end")
	}
	if got := strings.TrimSpace(mustRun(t, rt, sb, "echo again")); got != "again" {
		t.Fatalf("a later call: %q", got)
	}
}
