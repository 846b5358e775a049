//go:build linux

package e2blocal

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
			d.close()
			return nil, fmt.Errorf("cgroup v1 controller %s not mounted", c)
		}
		removeStaleGroups(filepath.Join(cgroupRoot, c, base))
		parent := filepath.Join(cgroupRoot, c, base, cgroupTagPrefix+tag)
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			d.close()
			return nil, fmt.Errorf("create cgroup %s: %w", parent, err)
		}
		d.parents[c] = parent
		d.own[c] = filepath.Join(cgroupRoot, c, base)
	}
	return d, nil
}

func (d *v1Driver) create(id string, l limits) (cgroup, error) {
	g := &v1Group{dirs: map[string]string{}, home: d.own}
	for c, parent := range d.parents {
		dir := filepath.Join(parent, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.destroy(context.Background())
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		g.dirs[c] = dir
	}
	if err := g.setLimits(l); err != nil {
		_ = g.destroy(context.Background())
		return nil, err
	}
	return g, nil
}

func (d *v1Driver) close() error {
	var errs []error
	for _, p := range d.parents {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type v1Group struct {
	dirs map[string]string
	home map[string]string // where the spawning thread returns to
}

func (g *v1Group) setLimits(l limits) error {
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := writeFile(filepath.Join(g.dirs["memory"], "memory.limit_in_bytes"), v); err != nil {
			return err
		}
		// Without swap accounting the file is absent; with it, the same cap
		// keeps a bomb from escaping into swap.
		if p := filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes"); fileExists(p) {
			_ = writeFile(p, v)
		}
	}
	if l.Pids > 0 {
		if err := writeFile(filepath.Join(g.dirs["pids"], "pids.max"), strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if l.CPUPercent > 0 {
		const period = 100000
		if err := writeFile(filepath.Join(g.dirs["cpu"], "cpu.cfs_period_us"), strconv.Itoa(period)); err != nil {
			return err
		}
		quota := period * l.CPUPercent / 100
		if err := writeFile(filepath.Join(g.dirs["cpu"], "cpu.cfs_quota_us"), strconv.Itoa(quota)); err != nil {
			return err
		}
	}
	return nil
}

func (g *v1Group) controllers() int { return len(g.dirs) }

func (g *v1Group) add(pid int) error {
	for _, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
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
func (g *v1Group) startIn(cmd *exec.Cmd) error {
	const self = "0"
	var errs []error
	moved := map[string]bool{}
	for c, dir := range g.dirs {
		if err := writeFile(filepath.Join(dir, "tasks"), self); err != nil {
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
			if err = writeFile(filepath.Join(g.home[c], "tasks"), self); err == nil {
				break
			}
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (g *v1Group) procs() ([]int, error) {
	return readProcs(filepath.Join(g.dirs["pids"], "cgroup.procs"))
}

func (g *v1Group) freezerState() string {
	data, err := os.ReadFile(filepath.Join(g.dirs["freezer"], "freezer.state"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

func (g *v1Group) freeze(ctx context.Context) error {
	if err := writeFile(filepath.Join(g.dirs["freezer"], "freezer.state"), "FROZEN"); err != nil {
		return err
	}
	// FREEZING means some task is still on its way (e.g. in an uninterruptible
	// sleep); the write has to be repeated until the group reports FROZEN.
	return waitFor(ctx, "cgroup freeze", func() bool {
		if g.freezerState() == "FROZEN" {
			return true
		}
		_ = writeFile(filepath.Join(g.dirs["freezer"], "freezer.state"), "FROZEN")
		return false
	})
}

func (g *v1Group) thaw() error {
	return writeFile(filepath.Join(g.dirs["freezer"], "freezer.state"), "THAWED")
}

func (g *v1Group) memory() (int64, int64, error) {
	used, err := readInt(filepath.Join(g.dirs["memory"], "memory.usage_in_bytes"))
	if err != nil {
		return 0, 0, err
	}
	cache := readStatField(filepath.Join(g.dirs["memory"], "memory.stat"), "total_cache")
	return used, cache, nil
}

// cpuUsage reads cpuacct.usage when the group joined a cpuacct hierarchy;
// sandboxes here do not (cpuacct is mounted apart from cpu on the hosts
// this runs on), so their CPU time comes from /proc.
func (g *v1Group) cpuUsage() (time.Duration, error) {
	dir, ok := g.dirs["cpuacct"]
	if !ok {
		return 0, errNoCPUAccounting
	}
	ns, err := readInt(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}

func (g *v1Group) destroy(ctx context.Context) error {
	var errs []error
	for _, dir := range g.dirs {
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
