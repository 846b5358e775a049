//go:build linux

package e2blocal

import (
	"net/http"
	"os"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail/jailtest"
)

// TestRuntimeOnCgroupV2 runs sandboxes with the v2 driver: every task of a
// tree lives in the sandbox's group, pause freezes it and keeps memory,
// kill removes the group, Close the runtime's parent.
func TestRuntimeOnCgroupV2(t *testing.T) {
	root := jailtest.V2Root(t)
	rt := startRuntime(t, Config{cgroupV2Root: root})
	d, ok := rt.cgroups.(*jail.V2Driver)
	if !ok {
		t.Fatalf("driver %T, want the v2 one", rt.cgroups)
	}
	sb := createSandbox(t, rt, nil)
	s := rt.lookup(sb.SandboxID)
	g := s.cg.(*jail.V2Group)
	mustRun(t, rt, sb, "sleep 30 >/dev/null 2>&1 &")
	tree := jail.ProcessTree(s.proc.Cmd.Process.Pid)
	if len(tree) < 4 {
		t.Fatalf("tree %v: want bwrap, its init, the agent and the sleep", tree)
	}
	for _, pid := range tree {
		if !jailtest.V2Member(t, root, g.Dir, pid) {
			t.Fatalf("pid %d of the tree is not in %s", pid, g.Dir)
		}
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+sb.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d", r.status)
	}
	assertGone(t, tree)
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("group %s left after kill: %v", g.Dir, err)
	}
	t.Run("pause keeps memory", func(t *testing.T) { pauseResumeKeepsMemory(t, rt) })
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Parent); !os.IsNotExist(err) {
		t.Fatalf("runtime group %s left after Close: %v", d.Parent, err)
	}
}
