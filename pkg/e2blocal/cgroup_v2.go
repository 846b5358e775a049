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
)

// v2Driver manages sandbox groups on a unified hierarchy. v2 forbids
// processes in inner nodes, so the runtime's parent group goes below its
// own group only when that is possible (a delegated, otherwise empty
// group); otherwise, as root, below the root group, whose controllers
// systemd already enables. When neither works detectCgroups returns nil.
type v2Driver struct {
	parent string
}

func newV2Driver(tag string) (*v2Driver, error) {
	own, err := ownCgroupPaths()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, base := range []string{filepath.Join(cgroupRoot, own[""]), cgroupRoot} {
		d, err := tryV2(base, tag)
		if err == nil {
			return d, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func tryV2(base, tag string) (*v2Driver, error) {
	const controllers = "+memory +pids +cpu"
	if err := writeFile(filepath.Join(base, "cgroup.subtree_control"), controllers); err != nil {
		return nil, fmt.Errorf("enable cgroup v2 controllers: %w", err)
	}
	removeStaleGroups(base)
	parent := filepath.Join(base, cgroupTagPrefix+tag)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), controllers); err != nil {
		_ = os.Remove(parent)
		return nil, fmt.Errorf("enable cgroup v2 controllers: %w", err)
	}
	return &v2Driver{parent: parent}, nil
}

func (d *v2Driver) create(id string, l limits) (cgroup, error) {
	dir := filepath.Join(d.parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	g := &v2Group{dir: dir}
	if err := g.setLimits(l); err != nil {
		_ = g.destroy(context.Background())
		return nil, err
	}
	return g, nil
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

func (g *v2Group) destroy(ctx context.Context) error {
	// cgroup.kill (5.14+) kills every task atomically; older kernels rely on
	// the caller having killed the tree.
	_ = writeFile(filepath.Join(g.dir, "cgroup.kill"), "1")
	return removeGroup(ctx, g.dir)
}
