package e2blocal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// uidPool hands out host uids for sandboxes when the runtime is root. Each
// sandbox gets its own uid so sandboxes cannot signal, trace or read each
// other and RLIMIT_NPROC counts one sandbox only. Several runtimes (parallel
// test packages, a dev server) share the range, so a uid is claimed with an
// flock on a per-uid lock file; the kernel drops the lock if we die.
type uidPool struct {
	base, count int
	lockDir     string
	next        int
}

type uidLease struct {
	uid  int
	lock *os.File
}

func newUIDPool(base, count int) (*uidPool, error) {
	dir := filepath.Join(os.TempDir(), "sessionbox-uids")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create uid lock dir: %w", err)
	}
	return &uidPool{base: base, count: count, lockDir: dir, next: os.Getpid() % count}, nil
}

// acquire is called with the runtime's lock held.
func (p *uidPool) acquire() (*uidLease, error) {
	for range p.count {
		uid := p.base + p.next
		p.next = (p.next + 1) % p.count
		f, err := os.OpenFile(filepath.Join(p.lockDir, strconv.Itoa(uid)), os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open uid lock: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &uidLease{uid: uid, lock: f}, nil
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock uid %d: %w", uid, err)
		}
	}
	return nil, fmt.Errorf("no free sandbox uid in %d..%d", p.base, p.base+p.count-1)
}

func (l *uidLease) release() {
	if l != nil && l.lock != nil {
		l.lock.Close()
	}
}
