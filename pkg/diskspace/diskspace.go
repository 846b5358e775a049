// Package diskspace keeps a floor of free space on a file system: work
// that would fill it (new sandboxes, uploads) is refused while the free
// space is below the floor, rather than filling the host's disk.
package diskspace

import (
	"errors"
	"fmt"
)

// ErrLow is what Check returns (wrapped) when free space is below the floor.
var ErrLow = errors.New("not enough free disk space")

// DefaultFloor is the free space kept by default: 1 GiB, or 5% of a file
// system smaller than 20 GiB.
const DefaultFloor = 1 << 30

// Statfs reports a file system's free (to unprivileged users) and total
// bytes.
type Statfs func(dir string) (free, total uint64, err error)

// Floor is a free-space floor on the file system holding Dir.
type Floor struct {
	Dir string
	// MinFree is the floor in bytes; 0 means DefaultFloor, capped at 5% of
	// the file system; negative turns the floor off.
	MinFree int64
	// Statfs defaults to the system's statfs; tests inject their own.
	Statfs Statfs
}

// Check returns an error wrapping ErrLow, naming the free space and the
// floor, when the file system holding Dir has less free space than the
// floor. A file system that cannot be measured passes.
func (f Floor) Check() error {
	free, floor, ok := f.measure()
	if !ok || free >= floor {
		return nil
	}
	return fmt.Errorf("%w: %d MiB free on the file system holding the data directory, below the floor of %d MiB; free some space (or stop sessions) and try again",
		ErrLow, free>>20, floor>>20)
}

// CheckReserve is Check for space already promised: it fails, wrapping
// ErrLow, when the free space less reserve bytes (what sandbox homes may
// still grow by, say) is below the floor.
func (f Floor) CheckReserve(reserve uint64) error {
	free, floor, ok := f.measure()
	if !ok || free >= floor && free-floor >= reserve {
		return nil
	}
	return fmt.Errorf("%w: %d MiB free on the file system holding the sandboxes' homes, which may grow by %d MiB together with a new one: that would leave less than the floor of %d MiB; stop sandboxes (or free some space) and try again",
		ErrLow, free>>20, reserve>>20, floor>>20)
}

// measure returns the free space and the floor; ok is false when the
// floor is off or the file system cannot be measured.
func (f Floor) measure() (free, floor uint64, ok bool) {
	if f.MinFree < 0 {
		return 0, 0, false
	}
	statfs := f.Statfs
	if statfs == nil {
		statfs = systemStatfs
	}
	free, total, err := statfs(f.Dir)
	if err != nil {
		return 0, 0, false
	}
	floor = uint64(f.MinFree)
	if floor == 0 {
		floor = min(DefaultFloor, total/20)
	}
	return free, floor, true
}
