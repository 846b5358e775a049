//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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
	growth, err := homesGrowth(filepath.Dir(rt.fs.SandboxDir("x")))
	if err != nil {
		return nil, fmt.Errorf("measure sandbox homes: %w", err)
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
// one's size less the bytes allocated to it.
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
// Config.RecoverHomes, when this runtime keeps it; "" otherwise.
func (rt *Runtime) orphanFor(md map[string]string) string {
	if rt.cfg.RecoverHomes == "" || rt.homes == nil {
		return ""
	}
	id := md[rt.cfg.RecoverHomes]
	if !validSandboxID(id) {
		return ""
	}
	img := rt.fs.OrphanImage(id)
	if _, err := os.Stat(img); err != nil {
		return ""
	}
	return img
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
	if err := os.Rename(s.adopt, img); err != nil {
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
