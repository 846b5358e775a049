//go:build linux

package jail

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// v2Root finds a unified hierarchy this process may manage: the host's own
// on a v2 host, the "unified" mount of a hybrid one.
func v2Root(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("managing cgroup v2 groups here needs root")
	}
	for _, dir := range []string{CgroupRoot, filepath.Join(CgroupRoot, "unified")} {
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

// TestCgroupV2Group drives one group through what the runtime asks of it
// on the kernel's own unified hierarchy: start a process inside it
// (CLONE_INTO_CGROUP), add another, list, freeze, thaw, and destroy, which
// kills every member and removes the group.
func TestCgroupV2Group(t *testing.T) {
	root := v2Root(t)
	d, err := NewV2Driver(root, fmt.Sprintf("%d-v2test", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cg, err := d.Create("sbx1", Limits{MemoryBytes: 64 << 20, Pids: 32, CPUPercent: 50})
	if err != nil {
		t.Fatal(err)
	}
	g := cg.(*V2Group)
	for _, c := range v2Controllers {
		_, err := os.Stat(filepath.Join(g.Dir, c+".max"))
		if d.enabled[c] != (err == nil) {
			t.Errorf("controller %s enabled %v, but %s.max: %v", c, d.enabled[c], c, err)
		}
	}
	born := exec.Command("sleep", "60")
	born.SysProcAttr = &syscall.SysProcAttr{}
	if err := g.StartIn(born); err != nil {
		t.Fatal(err)
	}
	defer born.Process.Kill()
	added := exec.Command("sleep", "60")
	if err := added.Start(); err != nil {
		t.Fatal(err)
	}
	defer added.Process.Kill()
	if err := g.Add(added.Process.Pid); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*os.Process{born.Process, added.Process} {
		if !v2Member(t, root, g.Dir, p.Pid) {
			t.Fatalf("pid %d is not in %s", p.Pid, g.Dir)
		}
	}
	if procs, err := g.Procs(); err != nil || len(procs) != 2 {
		t.Fatalf("procs %v (%v), want both", procs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	if ReadStatField(g.Dir+"/cgroup.events", "frozen") != 1 {
		t.Fatal("not frozen")
	}
	if err := g.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, "thaw", func() bool { return ReadStatField(g.Dir+"/cgroup.events", "frozen") == 0 }); err != nil {
		t.Fatal(err)
	}
	// destroy ends the members itself (cgroup.kill); reaping them is ours.
	destroyed := make(chan error, 1)
	go func() { destroyed <- g.Destroy(ctx) }()
	for _, c := range []*exec.Cmd{born, added} {
		if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("pid %d ended with %v, want killed", c.Process.Pid, err)
		}
	}
	if err := <-destroyed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("group %s still there: %v", g.Dir, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Parent); !os.IsNotExist(err) {
		t.Fatalf("parent %s still there: %v", d.Parent, err)
	}
}
