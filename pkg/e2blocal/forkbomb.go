//go:build linux

package e2blocal

import (
	"context"
	"slices"
	"syscall"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// A fork bomb inside a sandbox stops at the task limit (Config.Pids, the
// pids cgroup) but does not end: its tasks keep retrying their forks, so the
// sandbox burns CPU and nothing new can start in it, not even the command
// that would kill the bomb. The runtime defuses it on the sandbox's next
// request: when forks are being refused and the group is near its limit,
// every task but the tree's own (bwrap, its init, the agent) is killed. The
// interpreter then starts a fresh kernel and says so (kernel_restarted).

// bombShare is the part of the task limit in use past which refused forks
// are taken for a bomb rather than a busy but sane workload.
const bombShare = 0.9

// treeOf lists the tasks of the sandbox's own tree as it is right after
// the start (bwrap, its init, the agent): orphans of a bomb become the
// init's children too, so the tree cannot be told apart later by shape.
func treeOf(s *sandbox) []int {
	return jail.ProcessTreeDepth(s.proc.Cmd.Process.Pid, 2)
}

// defuseForkBomb kills the sandbox's workload when it holds the sandbox at
// its task limit, and reports whether it did. One read of pids.events per
// request when nothing is wrong.
func (s *sandbox) defuseForkBomb(ctx context.Context) bool {
	if s.cg == nil {
		return false
	}
	current, limit, refused, err := s.cg.Tasks()
	if err != nil || limit <= 0 || refused <= s.tasksRefused.Load() {
		return false
	}
	s.tasksRefused.Store(refused)
	if float64(current) < bombShare*float64(limit) {
		return false
	}
	s.defuse.Lock()
	defer s.defuse.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Frozen, the bomb cannot fork into the slots the kills free; the kill
	// is taken at the thaw, before any of them runs again.
	if err := s.cg.Freeze(ctx); err != nil {
		return false
	}
	keep := s.treePids
	pids, _ := s.cg.Procs()
	killed := 0
	for _, pid := range pids {
		if !slices.Contains(keep, pid) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	_ = s.cg.Thaw()
	// The killed tasks hold their slots until reaped: the request waits
	// for them, or its own forks would still be refused.
	wait, cancelWait := context.WithTimeout(ctx, 3*time.Second)
	defer cancelWait()
	_ = jail.WaitFor(wait, "the killed tasks to go", func() bool {
		procs, err := s.cg.Procs()
		return err != nil || len(procs) <= len(keep)
	})
	_, _, refused, _ = s.cg.Tasks()
	s.tasksRefused.Store(refused)
	s.rt.log.Warn("e2blocal: killed a sandbox's tasks held at its task limit (a fork bomb)",
		"sandbox", s.id, "tasks", current, "limit", limit, "killed", killed)
	return true
}
