//go:build linux

package jail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// v1Controllers are the hierarchies a sandbox joins. cpuacct is separate from
// cpu on this host's layout, and CPU time is read from /proc anyway.
var v1Controllers = []string{"memory", "pids", "cpu", "freezer"}

type v1Driver struct {
	parents map[string]string // controller -> this runtime's parent group
	own     map[string]string // controller -> the runtime's own group
}

func newV1Driver(tag string) (*v1Driver, error) {
	own, err := ownCgroupPaths()
	if err != nil {
		return nil, err
	}
	d := &v1Driver{parents: map[string]string{}, own: map[string]string{}}
	for _, c := range v1Controllers {
		base, ok := own[c]
		if !ok {
			d.Close()
			return nil, fmt.Errorf("cgroup v1 controller %s not mounted", c)
		}
		removeStaleGroups(filepath.Join(CgroupRoot, c, base))
		parent := filepath.Join(CgroupRoot, c, base, cgroupTagPrefix+tag)
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			d.Close()
			return nil, fmt.Errorf("create cgroup %s: %w", parent, err)
		}
		d.parents[c] = parent
		d.own[c] = filepath.Join(CgroupRoot, c, base)
	}
	return d, nil
}

func (d *v1Driver) Create(id string, l Limits) (Cgroup, error) {
	g := &V1Group{Dirs: map[string]string{}, Home: d.own}
	for c, parent := range d.parents {
		dir := filepath.Join(parent, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.Destroy(context.Background())
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		g.Dirs[c] = dir
	}
	if err := g.setLimits(l); err != nil {
		_ = g.Destroy(context.Background())
		return nil, err
	}
	return g, nil
}

func (d *v1Driver) Close() error {
	var errs []error
	for _, p := range d.parents {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type V1Group struct {
	Dirs map[string]string
	Home map[string]string // where the spawning thread returns to
}

func (g *V1Group) setLimits(l Limits) error {
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := WriteFile(filepath.Join(g.Dirs["memory"], "memory.limit_in_bytes"), v); err != nil {
			return err
		}
		// Without swap accounting the file is absent; with it, the same cap
		// keeps a bomb from escaping into swap.
		if p := filepath.Join(g.Dirs["memory"], "memory.memsw.limit_in_bytes"); fileExists(p) {
			_ = WriteFile(p, v)
		}
	}
	if l.Pids > 0 {
		if err := WriteFile(filepath.Join(g.Dirs["pids"], "pids.max"), strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if l.CPUPercent > 0 {
		const period = 100000
		if err := WriteFile(filepath.Join(g.Dirs["cpu"], "cpu.cfs_period_us"), strconv.Itoa(period)); err != nil {
			return err
		}
		quota := period * l.CPUPercent / 100
		if err := WriteFile(filepath.Join(g.Dirs["cpu"], "cpu.cfs_quota_us"), strconv.Itoa(quota)); err != nil {
			return err
		}
	}
	return nil
}

func (g *V1Group) Controllers() int { return len(g.Dirs) }

func (g *V1Group) Add(pid int) error {
	for _, dir := range g.Dirs {
		if err := WriteFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			// The task may have exited between listing and moving it.
			if errors.Is(err, syscall.ESRCH) {
				return nil
			}
			return err
		}
	}
	return nil
}

// startIn moves the calling OS thread (the spawner's locked thread) into
// the group, forks cmd there and moves the thread back: v1 lets a single
// thread change groups through "tasks", and a child is born in its parent
// thread's groups, so bwrap and everything below it never run outside the
// sandbox's limits. Memory is charged to the mm owner's group in v1, so
// the runtime's own memory stays where it is.
//
// The thread names itself as "0", not by its tid: a thread moving itself
// cannot exit or exec meanwhile, so the kernel (checked on 6.18) skips
// write-locking the global cgroup_threadgroup_rwsem, which waits for an
// RCU grace period: 8-13 ms of the spawner thread blocked per spawn, with
// every spawn of a burst queued behind it, against ~0.3 ms.
func (g *V1Group) startIn(cmd *exec.Cmd) error {
	const self = "0"
	var errs []error
	moved := map[string]bool{}
	for c, dir := range g.Dirs {
		if err := WriteFile(filepath.Join(dir, "tasks"), self); err != nil {
			errs = append(errs, err)
			break
		}
		moved[c] = true
	}
	if len(errs) == 0 {
		errs = append(errs, cmd.Start())
	}
	// Staying behind would put the runtime's spawner thread under the
	// sandbox's limits and freezer, so moving back is retried.
	for c := range moved {
		var err error
		for range 3 {
			if err = WriteFile(filepath.Join(g.Home[c], "tasks"), self); err == nil {
				break
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (g *V1Group) Procs() ([]int, error) {
	return readProcs(filepath.Join(g.Dirs["pids"], "cgroup.procs"))
}

func (g *V1Group) FreezerState() string {
	data, err := os.ReadFile(filepath.Join(g.Dirs["freezer"], "freezer.state"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func (g *V1Group) Freeze(ctx context.Context) error {
	if err := WriteFile(filepath.Join(g.Dirs["freezer"], "freezer.state"), "FROZEN"); err != nil {
		return err
	}
	// FREEZING means some task is still on its way (e.g. in an uninterruptible
	// sleep); the write has to be repeated until the group reports FROZEN.
	return WaitFor(ctx, "cgroup freeze", func() bool {
		if g.FreezerState() == "FROZEN" {
			return true
		}
		_ = WriteFile(filepath.Join(g.Dirs["freezer"], "freezer.state"), "FROZEN")
		return false
	})
}

func (g *V1Group) Thaw() error {
	return WriteFile(filepath.Join(g.Dirs["freezer"], "freezer.state"), "THAWED")
}

func (g *V1Group) Memory() (int64, int64, error) {
	used, err := readInt(filepath.Join(g.Dirs["memory"], "memory.usage_in_bytes"))
	if err != nil {
		return 0, 0, err
	}
	cache := ReadStatField(filepath.Join(g.Dirs["memory"], "memory.stat"), "total_cache")
	return used, cache, nil
}

// CPUUsage reads cpuacct.usage when the group joined a cpuacct hierarchy;
// sandboxes here do not (cpuacct is mounted apart from cpu on the hosts
// this runs on), so their CPU time comes from /proc.
func (g *V1Group) CPUUsage() (time.Duration, error) {
	dir, ok := g.Dirs["cpuacct"]
	if !ok {
		return 0, errNoCPUAccounting
	}
	ns, err := readInt(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

// SetCPUWeight writes cpu.shares, whose default 1024 stands for v2's 100
// (the kernel's own v1/v2 mapping); 2 is its least.
func (g *V1Group) SetCPUWeight(weight int) error {
	dir, ok := g.Dirs["cpu"]
	if !ok {
		return nil
	}
	shares := max(2, clampWeight(weight)*1024/DefaultCPUWeight)
	return WriteFile(filepath.Join(dir, "cpu.shares"), strconv.Itoa(shares))
}

func (g *V1Group) Tasks() (current, limit, refused int64, err error) {
	return readTasks(g.Dirs["pids"])
}

func (g *V1Group) Destroy(ctx context.Context) error {
	var errs []error
	for _, dir := range g.Dirs {
		if err := removeGroup(ctx, dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
