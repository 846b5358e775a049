//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// homeSpaceError is a home refused by Config.HomeFloor: a 507 whose
// message is the floor's, which names no path.
type homeSpaceError struct{ err error }

func (e *homeSpaceError) Error() string { return e.err.Error() }
func (e *homeSpaceError) Unwrap() error { return e.err }

// homeSpaceMessage is the floor's message when err is a refused home.
func homeSpaceMessage(err error) (string, bool) {
	var hs *homeSpaceError
	if errors.As(err, &hs) {
		return hs.Error(), true
	}
	return "", false
}

// homeBudget admits image homes so that what they may still grow to never
// eats into the free-space floor: each home is a sparse file of DiskMB
// whose blocks are allocated as the sandbox writes, so a home admitted now
// is a promise of its whole size. pending counts homes admitted whose
// images may not exist yet (they are then counted twice, on the safe side).
type homeBudget struct {
	mu      sync.Mutex
	pending int
}

// admitHome reserves room for one more home, or returns a *homeSpaceError
// that names the floor. done ends the reservation once the home's image
// exists (or failed to).
func (rt *Runtime) admitHome() (done func(), err error) {
	if rt.cfg.HomeFloor == nil || rt.homes == nil {
		return func() {}, nil
	}
	b := &rt.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	size := uint64(rt.cfg.DiskMB) << 20
	// An orphan (Config.RecoverHomes) may be adopted and grow as much as
	// a live home, so it counts until it is adopted or expires.
	var growth uint64
	for _, dir := range []string{filepath.Dir(rt.fs.SandboxDir("x")), rt.fs.OrphanDir()} {
		g, err := homesGrowth(dir)
		if err != nil {
			return nil, fmt.Errorf("measure sandbox homes: %w", err)
		}
		growth += g
	}
	floor := *rt.cfg.HomeFloor
	floor.Dir = rt.fs.Shared // where the homes are, not the data dir
	if err := floor.CheckReserve(growth + uint64(b.pending+1)*size); err != nil {
		return nil, &homeSpaceError{err}
	}
	b.pending++
	return func() {
		b.mu.Lock()
		b.pending--
		b.mu.Unlock()
	}, nil
}

// homesGrowth is what the home images in dir may still grow by: each
// one's size less the bytes allocated to it (plain-dir homes have no size
// to grow to: what they hold is already off the free space).
func homesGrowth(dir string) (uint64, error) {
	imgs, err := filepath.Glob(filepath.Join(dir, "*.img"))
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, img := range imgs {
		fi, err := os.Stat(img)
		if err != nil {
			continue // removed meanwhile
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		if used := st.Blocks * 512; used < fi.Size() {
			sum += uint64(fi.Size() - used)
		}
	}
	return sum, nil
}

// orphanFor is the earlier home a create's metadata asks for under
// Config.RecoverHomes, when this runtime keeps it (an image when homes are
// images, else a plain dir); "" otherwise.
func (rt *Runtime) orphanFor(md map[string]string) string {
	if rt.cfg.RecoverHomes == "" {
		return ""
	}
	id := md[rt.cfg.RecoverHomes]
	if !validSandboxID(id) {
		return ""
	}
	home := rt.fs.OrphanHome(id)
	if rt.homes != nil {
		home = rt.fs.OrphanImage(id)
	}
	fi, err := os.Lstat(home)
	if err != nil || fi.IsDir() == (rt.homes != nil) || fi.Mode()&os.ModeSymlink != 0 {
		return ""
	}
	return home
}

// validSandboxID: ids are lowercase letters and digits, so one names no
// other path.
func validSandboxID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// adoptHome mounts s.adopt as s's home, reporting whether it did; if it
// cannot (another create took it, the image is damaged) s gets a fresh
// home, and the failure is logged.
func (rt *Runtime) adoptHome(ctx context.Context, s *sandbox) bool {
	img := rt.fs.HomeImage(s.hostKey)
	if err := rt.takeOrphan(s.adopt, img); err != nil {
		return false
	}
	rootShift := 0
	if s.userUID >= 0 {
		rootShift = s.userUID - s.hostUID
	}
	if err := rt.homes.Adopt(ctx, img, rt.fs.HomeDir(s.hostKey), s.homeOwner(), rootShift); err != nil {
		rt.log.Warn("e2blocal: an earlier sandbox's home could not be adopted; the sandbox gets an empty one", "sandbox", s.id, "error", err)
		_ = os.Remove(img)
		return false
	}
	s.homeMounted, s.adopted = true, true
	return true
}

// adoptDir makes the plain-dir orphan s.adopt s's home, reporting whether
// it did. Not as root, every sandbox runs as the runtime's own uid, so the
// files are already the new sandbox's; as root they are given to its uids
// (remapOwners). On a failure s gets a fresh home, and it is logged.
func (rt *Runtime) adoptDir(s *sandbox) bool {
	home := rt.fs.HomeDir(s.hostKey)
	if err := rt.takeOrphan(s.adopt, home); err != nil {
		return false // another create took it, or it expired
	}
	err := os.Chmod(home, 0o700)
	if err == nil && s.hostUID >= 0 {
		err = remapOwners(home, s.homeOwner(), s.hostUID)
	}
	if err != nil {
		rt.log.Warn("e2blocal: an earlier sandbox's home could not be adopted; the sandbox gets an empty one", "sandbox", s.id, "error", err)
		if err := os.RemoveAll(home); err != nil {
			rt.log.Warn("e2blocal: remove a home that could not be adopted", "sandbox", s.id, "error", err)
		}
		return false
	}
	s.adopted = true
	return true
}

// remapOwners gives the tree at home to a new sandbox's uids: what the old
// user owned (the owner of home itself) to user, the rest to root inside
// (rootUID), uids and gids alike. A sandbox maps only those two ids, so
// nothing else can be in its home. Links are not followed, and no sandbox
// runs on the tree meanwhile.
func remapOwners(home string, user, rootUID int) error {
	top, err := os.Lstat(home)
	if err != nil {
		return err
	}
	st, ok := top.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("stat %s: no owner", home)
	}
	oldUser, oldGroup := st.Uid, st.Gid
	pick := func(id, old uint32) int {
		if id == old {
			return user
		}
		return rootUID
	}
	return filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no owner", p)
		}
		return os.Lchown(p, pick(st.Uid, oldUser), pick(st.Gid, oldGroup))
	})
}

// orphanSweepEvery is how often expired orphans are looked for: a tenth
// of their time to live, within bounds.
func orphanSweepEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/10, time.Second), 10*time.Minute)
}

// sweepOrphans removes, until the runtime closes, the orphan homes no
// create adopted within Config.OrphanTTL. A kill of the dead sandbox's id
// is no sign the home is unwanted: a session starting again kills its
// previous sandbox first, then asks for the home.
func (rt *Runtime) sweepOrphans() {
	t := time.NewTicker(orphanSweepEvery(rt.cfg.OrphanTTL))
	defer t.Stop()
	for {
		rt.expireOrphans(time.Now())
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// takeOrphan moves the orphan home at from to to, unless it expired.
func (rt *Runtime) takeOrphan(from, to string) error {
	rt.orphanMu.Lock()
	defer rt.orphanMu.Unlock()
	return os.Rename(from, to)
}

// expireOrphans removes the orphans salvaged more than Config.OrphanTTL
// before now.
func (rt *Runtime) expireOrphans(now time.Time) {
	rt.orphanMu.Lock()
	defer rt.orphanMu.Unlock()
	n, err := rt.fs.RemoveOrphans(now.Add(-rt.cfg.OrphanTTL))
	if n > 0 {
		rt.log.Info("e2blocal: removed the homes of dead sandboxes nobody adopted", "count", n, "ttl", rt.cfg.OrphanTTL)
	}
	if err != nil {
		rt.log.Warn("e2blocal: expired orphan homes", "error", err)
	}
}

// recoveredMetadata is md without the Config.RecoverHomes key unless the
// sandbox adopted the home it names.
func (rt *Runtime) recoveredMetadata(md map[string]string, adopted bool) map[string]string {
	if rt.cfg.RecoverHomes == "" || adopted {
		return md
	}
	if _, ok := md[rt.cfg.RecoverHomes]; !ok {
		return md
	}
	md = maps.Clone(md)
	delete(md, rt.cfg.RecoverHomes)
	return md
}
