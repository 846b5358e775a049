//go:build linux

package e2blocal

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// v2Root finds a unified hierarchy this process may manage: the host's own
// on a v2 host, the "unified" mount of a hybrid one.
func v2Root(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("managing cgroup v2 groups here needs root")
	}
	for _, dir := range []string{jail.CgroupRoot, filepath.Join(jail.CgroupRoot, "unified")} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir
		}
	}
	t.Skip("no cgroup v2 hierarchy mounted")
	return ""
}

// v2Member reports whether pid's unified-hierarchy group is dir.
func v2Member(t testing.TB, root, dir string, pid int) bool {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	want := "0::" + strings.TrimPrefix(dir, root) + "\n"
	return strings.Contains(string(data), want)
}

// TestRuntimeOnCgroupV2 runs sandboxes with the v2 driver: every task of a
// tree lives in the sandbox's group, pause freezes it and keeps memory,
// kill removes the group, Close the runtime's parent.
func TestRuntimeOnCgroupV2(t *testing.T) {
	root := v2Root(t)
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
		if !v2Member(t, root, g.Dir, pid) {
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
