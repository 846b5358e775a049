//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// v2Driver manages sandbox groups on a unified hierarchy. v2 forbids
// processes in inner nodes, so the runtime's parent group goes below its
// own group only when that is possible (a delegated, otherwise empty
// group); otherwise, as root, below the root group, whose controllers
// systemd already enables. When neither works detectCgroups returns nil.
// A controller the hierarchy does not offer leaves its limit unenforced;
// missing names them so the runtime can say so.
type v2Driver struct {
	parent  string
	enabled map[string]bool // of v2Controllers
	missing []string
}

// v2Controllers are the controllers behind the sandbox limits.
var v2Controllers = []string{"memory", "pids", "cpu"}

// newV2Driver manages groups on the unified hierarchy mounted at root
// (/sys/fs/cgroup on a v2 host).
func newV2Driver(root, tag string) (*v2Driver, error) {
	own, err := ownCgroupPaths()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, base := range []string{filepath.Join(root, own[""]), root} {
		d, err := tryV2(base, tag)
		if err == nil {
			return d, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func tryV2(base, tag string) (*v2Driver, error) {
	offered, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup v2 controllers: %w", err)
	}
	d := &v2Driver{enabled: map[string]bool{}}
	var enable []string
	for _, c := range v2Controllers {
		if slices.Contains(strings.Fields(string(offered)), c) {
			d.enabled[c] = true
			enable = append(enable, "+"+c)
		} else {
			d.missing = append(d.missing, c)
		}
	}
	if err := d.enable(base, enable); err != nil {
		return nil, err
	}
	removeStaleGroups(base)
	d.parent = filepath.Join(base, cgroupTagPrefix+tag)
	if err := os.Mkdir(d.parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup %s: %w", d.parent, err)
	}
	if err := d.enable(d.parent, enable); err != nil {
		_ = os.Remove(d.parent)
		return nil, err
	}
	return d, nil
}

// enable turns controllers on for dir's children.
func (d *v2Driver) enable(dir string, controllers []string) error {
	if len(controllers) == 0 {
		return nil
	}
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(controllers, " ")); err != nil {
		return fmt.Errorf("enable cgroup v2 controllers: %w", err)
	}
	return nil
}

func (d *v2Driver) create(id string, l limits) (cgroup, error) {
	dir := filepath.Join(d.parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	g := &v2Group{dir: dir}
	if err := g.setLimits(d.enforceable(l)); err != nil {
		_ = g.destroy(context.Background())
		return nil, err
	}
	return g, nil
}

// enforceable drops the limits of controllers the hierarchy lacks.
func (d *v2Driver) enforceable(l limits) limits {
	if !d.enabled["memory"] {
		l.MemoryBytes = 0
	}
	if !d.enabled["pids"] {
		l.Pids = 0
	}
	if !d.enabled["cpu"] {
		l.CPUPercent = 0
	}
	return l
}

func (d *v2Driver) close() error {
	if err := os.Remove(d.parent); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", d.parent, err)
	}
	return nil
}

type v2Group struct {
	dir string
}

func (g *v2Group) setLimits(l limits) error {
	if l.MemoryBytes > 0 {
		if err := writeFile(filepath.Join(g.dir, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		_ = writeFile(filepath.Join(g.dir, "memory.swap.max"), "0")
	}
	if l.Pids > 0 {
		if err := writeFile(filepath.Join(g.dir, "pids.max"), strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if l.CPUPercent > 0 {
		const period = 100000
		v := fmt.Sprintf("%d %d", period*l.CPUPercent/100, period)
		if err := writeFile(filepath.Join(g.dir, "cpu.max"), v); err != nil {
			return err
		}
	}
	return nil
}

func (g *v2Group) controllers() int { return 1 }

func (g *v2Group) add(pid int) error {
	return writeFile(filepath.Join(g.dir, "cgroup.procs"), strconv.Itoa(pid))
}

// startIn uses clone3's CLONE_INTO_CGROUP: the child starts in the group.
func (g *v2Group) startIn(cmd *exec.Cmd) error {
	dir, err := os.Open(g.dir)
	if err != nil {
		return fmt.Errorf("open cgroup %s: %w", g.dir, err)
	}
	defer dir.Close()
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(dir.Fd())
	return cmd.Start()
}

func (g *v2Group) procs() ([]int, error) {
	return readProcs(filepath.Join(g.dir, "cgroup.procs"))
}

func (g *v2Group) freeze(ctx context.Context) error {
	if err := writeFile(filepath.Join(g.dir, "cgroup.freeze"), "1"); err != nil {
		return err
	}
	return waitFor(ctx, "cgroup freeze", func() bool {
		data, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
		return err == nil && strings.Contains(string(data), "frozen 1")
	})
}

func (g *v2Group) thaw() error {
	return writeFile(filepath.Join(g.dir, "cgroup.freeze"), "0")
}

func (g *v2Group) memory() (int64, int64, error) {
	used, err := readInt(filepath.Join(g.dir, "memory.current"))
	if err != nil {
		return 0, 0, err
	}
	return used, readStatField(filepath.Join(g.dir, "memory.stat"), "file"), nil
}

// cpuUsage reads usage_usec of cpu.stat, a core file present whether or
// not the cpu controller is enabled.
func (g *v2Group) cpuUsage() (time.Duration, error) {
	path := filepath.Join(g.dir, "cpu.stat")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s: %w", path, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("%s has no usage_usec: %w", path, errNoCPUAccounting)
}

func (g *v2Group) destroy(ctx context.Context) error {
	// cgroup.kill (5.14+) kills every task atomically; older kernels rely on
	// the caller having killed the tree.
	_ = writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
	return removeGroup(ctx, g.dir)
}
