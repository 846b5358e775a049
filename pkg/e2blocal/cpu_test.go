//go:build linux

package e2blocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

func TestCPUPercent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := func(after time.Duration, used time.Duration, cgroup bool) cpuSample {
		return cpuSample{at: at.Add(after), used: used, cgroup: cgroup}
	}
	cases := []struct {
		name      string
		prev, cur cpuSample
		count     int
		want      float64
	}{
		{"one busy CPU of two", sample(0, time.Second, true), sample(10*time.Second, 11*time.Second, true), 2, 50},
		{"idle", sample(0, time.Second, false), sample(5*time.Second, time.Second, false), 1, 0},
		{"first sample", cpuSample{}, sample(5*time.Second, 3*time.Second, true), 1, 0},
		{"source changed", sample(0, time.Second, false), sample(5*time.Second, 4*time.Second, true), 1, 0},
		{"a process exited and took its times", sample(0, 9*time.Second, false), sample(5*time.Second, 2*time.Second, false), 1, 0},
		{"clock rounding past all CPUs", sample(0, 0, false), sample(time.Second, 1100*time.Millisecond, false), 1, 100},
		{"no time passed", sample(0, 0, true), sample(0, time.Second, true), 1, 0},
	}
	for _, tc := range cases {
		if got := cpuPercent(tc.prev, tc.cur, tc.count); got != tc.want {
			t.Errorf("%s: %v%%, want %v%%", tc.name, got, tc.want)
		}
	}
}

// TestCgroupV2CPUUsage: a v2 group's CPU time includes processes that have
// exited, which a sum over /proc of the live ones would lose.
func TestCgroupV2CPUUsage(t *testing.T) {
	root := v2Root(t)
	d, err := jail.NewV2Driver(root, fmt.Sprintf("%d-cputest", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cg, err := d.Create("sbx1", jail.Limits{})
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
	if err := cg.StartIn(burn); err != nil {
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
	v1 := &jail.V1Group{Dirs: map[string]string{"memory": t.TempDir()}}
	if _, err := v1.CPUUsage(); !errors.Is(err, jail.ErrNoCPUAccounting) {
		t.Fatalf("a v1 group without cpuacct: %v", err)
	}
}
