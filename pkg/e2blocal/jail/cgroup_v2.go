//go:build linux

package jail

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

// V2Driver manages sandbox groups on a unified hierarchy. v2 forbids
// processes in inner nodes, so the runtime's parent group goes below its
// own group only when that is possible (a delegated, otherwise empty
// group); otherwise, as root, below the root group, whose controllers
// systemd already enables. When neither works detectCgroups returns nil.
// A controller the hierarchy does not offer leaves its limit unenforced;
// missing names them so the runtime can say so.
type V2Driver struct {
	Parent  string
	enabled map[string]bool // of v2Controllers
	missing []string
}

// v2Controllers are the controllers behind the sandbox limits.
var v2Controllers = []string{"memory", "pids", "cpu"}

// newV2Driver manages groups on the unified hierarchy mounted at root
// (/sys/fs/cgroup on a v2 host).
func newV2Driver(root, tag string) (*V2Driver, error) {
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

func tryV2(base, tag string) (*V2Driver, error) {
	offered, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup v2 controllers: %w", err)
	}
	d := &V2Driver{enabled: map[string]bool{}}
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
	d.Parent = filepath.Join(base, cgroupTagPrefix+tag)
	if err := os.Mkdir(d.Parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup %s: %w", d.Parent, err)
	}
	if err := d.enable(d.Parent, enable); err != nil {
		_ = os.Remove(d.Parent)
		return nil, err
	}
	return d, nil
}

// enable turns controllers on for dir's children.
func (d *V2Driver) enable(dir string, controllers []string) error {
	if len(controllers) == 0 {
		return nil
	}
	if err := WriteFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(controllers, " ")); err != nil {
		return fmt.Errorf("enable cgroup v2 controllers: %w", err)
	}
	return nil
}

func (d *V2Driver) Create(id string, l Limits) (Cgroup, error) {
	dir := filepath.Join(d.Parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	g := &V2Group{Dir: dir}
	if err := g.setLimits(d.enforceable(l)); err != nil {
		_ = g.Destroy(context.Background())
		return nil, err
	}
	return g, nil
}

// enforceable drops the limits of controllers the hierarchy lacks.
func (d *V2Driver) enforceable(l Limits) Limits {
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

func (d *V2Driver) Close() error {
	if err := os.Remove(d.Parent); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", d.Parent, err)
	}
	return nil
}

type V2Group struct {
	Dir string
}

func (g *V2Group) setLimits(l Limits) error {
	if l.MemoryBytes > 0 {
		if err := WriteFile(filepath.Join(g.Dir, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		_ = WriteFile(filepath.Join(g.Dir, "memory.swap.max"), "0")
	}
	if l.Pids > 0 {
		if err := WriteFile(filepath.Join(g.Dir, "pids.max"), strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if l.CPUPercent > 0 {
		const period = 100000
		v := fmt.Sprintf("%d %d", period*l.CPUPercent/100, period)
		if err := WriteFile(filepath.Join(g.Dir, "cpu.max"), v); err != nil {
			return err
		}
	}
	return nil
}

func (g *V2Group) Controllers() int { return 1 }

func (g *V2Group) Add(pid int) error {
	return WriteFile(filepath.Join(g.Dir, "cgroup.procs"), strconv.Itoa(pid))
}

// startIn uses clone3's CLONE_INTO_CGROUP: the child starts in the group.
func (g *V2Group) startIn(cmd *exec.Cmd) error {
	dir, err := os.Open(g.Dir)
	if err != nil {
		return fmt.Errorf("open cgroup %s: %w", g.Dir, err)
	}
	defer dir.Close()
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(dir.Fd())
	return cmd.Start()
}

func (g *V2Group) Procs() ([]int, error) {
	return readProcs(filepath.Join(g.Dir, "cgroup.procs"))
}

func (g *V2Group) Freeze(ctx context.Context) error {
	if err := WriteFile(filepath.Join(g.Dir, "cgroup.freeze"), "1"); err != nil {
		return err
	}
	return WaitFor(ctx, "cgroup freeze", func() bool {
		data, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.events"))
		return err == nil && strings.Contains(string(data), "frozen 1")
	})
}

func (g *V2Group) Thaw() error {
	return WriteFile(filepath.Join(g.Dir, "cgroup.freeze"), "0")
}

func (g *V2Group) Memory() (int64, int64, error) {
	used, err := readInt(filepath.Join(g.Dir, "memory.current"))
	if err != nil {
		return 0, 0, err
	}
	return used, ReadStatField(filepath.Join(g.Dir, "memory.stat"), "file"), nil
}

// CPUUsage reads usage_usec of cpu.stat, a core file present whether or
// not the cpu controller is enabled.
func (g *V2Group) CPUUsage() (time.Duration, error) {
	path := filepath.Join(g.Dir, "cpu.stat")
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

func (g *V2Group) SetCPUWeight(weight int) error {
	return WriteFile(filepath.Join(g.Dir, "cpu.weight"), strconv.Itoa(clampWeight(weight)))
}

func (g *V2Group) Tasks() (current, limit, refused int64, err error) {
	return readTasks(g.Dir)
}

func (g *V2Group) Destroy(ctx context.Context) error {
	// cgroup.kill (5.14+) kills every task atomically; older kernels rely on
	// the caller having killed the tree.
	_ = WriteFile(filepath.Join(g.Dir, "cgroup.kill"), "1")
	return removeGroup(ctx, g.Dir)
}
