//go:build linux

package jail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail/jailtest"
)

// TestCgroupV2Group drives one group through what the runtime asks of it
// on the kernel's own unified hierarchy: start a process inside it
// (CLONE_INTO_CGROUP), add another, list, freeze, thaw, and destroy, which
// kills every member and removes the group.
func TestCgroupV2Group(t *testing.T) {
	root := jailtest.V2Root(t)
	d, err := newV2Driver(root, fmt.Sprintf("%d-v2test", os.Getpid()))
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
	if err := g.startIn(born); err != nil {
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
		if !jailtest.V2Member(t, root, g.Dir, p.Pid) {
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

// TestCgroupV2CPUUsage: a v2 group's CPU time includes processes that have
// exited, which a sum over /proc of the live ones would lose.
func TestCgroupV2CPUUsage(t *testing.T) {
	root := jailtest.V2Root(t)
	d, err := newV2Driver(root, fmt.Sprintf("%d-cputest", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cg, err := d.Create("sbx1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Destroy(t.Context())
	before, err := cg.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	burn := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	burn.SysProcAttr = &syscall.SysProcAttr{}
	if err := cg.startIn(burn); err != nil {
		t.Fatal(err)
	}
	if err := burn.Wait(); err != nil {
		t.Fatal(err)
	}
	spent := burn.ProcessState.UserTime() + burn.ProcessState.SystemTime()
	after, err := cg.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	if procs, _ := cg.Procs(); len(procs) != 0 {
		t.Fatalf("the group still has members %v", procs)
	}
	// The kernel's two clocks differ by a tick or so; the exited shell's
	// time must be there.
	if got := after - before; got < spent/2 || got <= 0 {
		t.Fatalf("the group used %v across the run, the shell alone %v", got, spent)
	}
	v1 := &V1Group{Dirs: map[string]string{"memory": t.TempDir()}}
	if _, err := v1.CPUUsage(); !errors.Is(err, errNoCPUAccounting) {
		t.Fatalf("a v1 group without cpuacct: %v", err)
	}
}
