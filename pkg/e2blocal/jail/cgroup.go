//go:build linux

package jail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Facts this file depends on (checked on the development machine, kernel
// 6.18, running as root in a container):
//   - The host has cgroup v1 with memory, pids, cpu, cpuacct and freezer each
//     mounted at /sys/fs/cgroup/<controller>, and a v2 "unified" mount at
//     /sys/fs/cgroup/unified offering only hugetlb, on which the v2 code
//     (groups, clone into a group, freeze, kill) is tested. Root may mkdir
//     child groups below its own group (read from /proc/self/cgroup), so
//     sandboxes get real limits there.
//   - v1 memory has use_hierarchy=1, so a sandbox's group is charged for
//     everything its tree allocates, tmpfs pages included.
//   - An unprivileged runtime usually cannot create groups (no delegation):
//     then sandboxes run without cgroup limits, pause falls back to SIGSTOP
//     of the tree, and rlimits remain the only resource bounds.
// On a pure v2 host (cgroup.controllers at /sys/fs/cgroup) the same limits use
// memory.max, pids.max, cpu.max and cgroup.freeze/cgroup.kill.

const CgroupRoot = "/sys/fs/cgroup"

// cgroupTagPrefix starts every runtime's parent group name, followed by the
// runtime's pid: groups left by a runtime that was killed are recognised
// and removed by the next one.
const cgroupTagPrefix = "sessionbox-"

// Limits are the per-sandbox cgroup limits.
type Limits struct {
	MemoryBytes int64
	Pids        int64
	CPUPercent  int // 100 = one full core
}

// CgroupDriver creates one group per sandbox under the runtime's own group.
type CgroupDriver interface {
	Create(id string, l Limits) (Cgroup, error)
	Close() error
}

// Cgroup is one sandbox's group (across controllers on v1).
type Cgroup interface {
	Controllers() int // lines naming the group in /proc/<pid>/cgroup of a member
	Add(pid int) error
	startIn(cmd *exec.Cmd) error // start cmd so that it is born in the group
	Procs() ([]int, error)
	Freeze(ctx context.Context) error
	Thaw() error
	Memory() (used, cache int64, err error)
	// CPUUsage is the CPU time the group's tasks used, exited ones
	// included; errNoCPUAccounting where the group has no such figure.
	CPUUsage() (time.Duration, error)
	// SetCPUWeight sets the group's CPU weight among its siblings, in v2's
	// cpu.weight units (1 to 10000, DefaultCPUWeight by default); v1 maps
	// it onto cpu.shares. It governs only CPU that is contended.
	SetCPUWeight(weight int) error
	// Tasks reads the task count, its limit (-1: none) and how many forks
	// the limit has refused so far.
	Tasks() (current, limit, refused int64, err error)
	Destroy(ctx context.Context) error
}

// readTasks reads the pids controller's figures in dir (v1 and v2 alike).
func readTasks(dir string) (current, limit, refused int64, err error) {
	if current, err = readInt(filepath.Join(dir, "pids.current")); err != nil {
		return 0, 0, 0, err
	}
	if limit, err = readInt(filepath.Join(dir, "pids.max")); err != nil {
		return 0, 0, 0, err
	}
	return current, limit, ReadStatField(filepath.Join(dir, "pids.events"), "max"), nil
}

// DefaultCPUWeight is cgroup v2's default cpu.weight, the weight of one
// principal's sandboxes together.
const DefaultCPUWeight = 100

// clampWeight keeps weight within cpu.weight's range.
func clampWeight(weight int) int {
	return min(max(weight, 1), 10000)
}

// DetectCgroups returns a driver, or nil when this process cannot manage
// cgroups (then callers use rlimits and signals only); v2Root, when set,
// picks a unified hierarchy mounted elsewhere (hybrid hosts, tests).
func DetectCgroups(runtimeTag, v2Root string, log *slog.Logger) (CgroupDriver, error) {
	if v2Root == "" {
		if _, err := os.Stat(filepath.Join(CgroupRoot, "cgroup.controllers")); err != nil {
			d, err := newV1Driver(runtimeTag)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		v2Root = CgroupRoot
	}
	d, err := newV2Driver(v2Root, runtimeTag)
	if err != nil {
		return nil, err
	}
	if len(d.missing) > 0 {
		log.Warn("e2blocal: cgroup v2 lacks controllers: those sandbox limits are not enforced", "cgroup", v2Root, "missing", strings.Join(d.missing, ","))
	}
	return d, nil
}

// ownCgroupPaths maps controller (or "" for v2) to this process's group path.
func ownCgroupPaths() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// removeStaleGroups removes groups of dead runtimes below base (and their empty
// sandbox groups). Their tasks died with them: sandboxes die with bwrap's
// parent, so only empty directories are left.
func removeStaleGroups(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cgroupTagPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue
		}
		dir := filepath.Join(base, e.Name())
		children, _ := os.ReadDir(dir)
		for _, c := range children {
			if c.IsDir() {
				_ = os.Remove(filepath.Join(dir, c.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

func WriteFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// errNoCPUAccounting: the group keeps no CPU time (a v1 host's sandboxes
// join no cpuacct hierarchy); callers sum their processes' times instead.
var errNoCPUAccounting = errors.New("no CPU accounting in this cgroup")

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

func ReadStatField(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == field {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func readProcs(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// removeGroup removes an emptied group; rmdir fails with EBUSY until the
// kernel has reaped every task, so it retries briefly.
func removeGroup(ctx context.Context, dir string) error {
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func WaitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}
