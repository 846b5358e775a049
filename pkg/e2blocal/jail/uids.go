//go:build linux

package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// UIDPool hands out host uids for sandboxes when the runtime is root. Each
// sandbox gets its own uid so sandboxes cannot signal, trace or read each
// other and RLIMIT_NPROC counts one sandbox only. Several runtimes (parallel
// test packages, a dev server) share the range, so a uid is claimed with an
// flock on a per-uid lock file; the kernel drops the lock if we die.
type UIDPool struct {
	base, count int
	LockDir     string
	next        int
}

type UIDLease struct {
	UID      int
	lock     *os.File
	Released atomic.Bool
}

// UIDLockDir is where runtimes agree on uid leases. The pool exists only
// when we are root, and only root may create entries in /run, so no other
// local user can pre-create it and steal or block the leases, as a
// world-writable /tmp would allow.
func UIDLockDir() (string, error) {
	if fi, err := os.Stat("/run"); err != nil || !fi.IsDir() {
		return filepath.Join(os.TempDir(), "sessionbox-uids"), nil
	}
	if err := privateDir("/run/sessionbox"); err != nil {
		return "", fmt.Errorf("uid lock dir: %w", err)
	}
	return "/run/sessionbox/uids", nil
}

func NewUIDPool(base, count int, dir string) (*UIDPool, error) {
	if err := privateDir(dir); err != nil {
		return nil, fmt.Errorf("uid lock dir: %w", err)
	}
	return &UIDPool{base: base, count: count, LockDir: dir, next: os.Getpid() % count}, nil
}

// privateDir makes sure dir is a real directory (not a symlink) that only we
// own and can write, creating it 0700 when missing. An existing one that
// anybody else could have made or could write to is refused, never reused.
func privateDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (mode %s)", dir, fi.Mode())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("inspect %s: no owner information", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not by us (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("%s has mode %s, want 0700", dir, fi.Mode().Perm())
	}
	return nil
}

// Acquire is called with the runtime's lock held.
func (p *UIDPool) Acquire() (*UIDLease, error) {
	for range p.count {
		uid := p.base + p.next
		p.next = (p.next + 1) % p.count
		f, err := os.OpenFile(filepath.Join(p.LockDir, strconv.Itoa(uid)), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open uid lock: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &UIDLease{UID: uid, lock: f}, nil
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock uid %d: %w", uid, err)
		}
	}
	return nil, fmt.Errorf("no free sandbox uid in %d..%d", p.base, p.base+p.count-1)
}

func (l *UIDLease) Release() {
	if l != nil && l.lock != nil && l.Released.CompareAndSwap(false, true) {
		l.lock.Close()
	}
}
