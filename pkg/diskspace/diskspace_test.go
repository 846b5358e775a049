package diskspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/diskspace"
)

func TestFloor(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	cases := []struct {
		name         string
		minFree      int64
		free, total  uint64
		statErr      error
		wantLow      bool
		wantInDetail string
	}{
		{"plenty", 0, 50 * gib, 100 * gib, nil, false, ""},
		{"below 1 GiB on a big disk", 0, gib - 1, 100 * gib, nil, true, "below the floor of 1024 MiB"},
		{"5% of a small disk", 0, 600 << 20, 10 * gib, nil, false, ""},
		{"below 5% of a small disk", 0, 500 << 20, 20*gib - 1, nil, true, "500 MiB free"},
		{"configured floor", 2 * gib, gib, 100 * gib, nil, true, "below the floor of 2048 MiB"},
		{"off", -1, 0, 100 * gib, nil, false, ""},
		{"unmeasurable passes", 0, 0, 0, errors.New("no statfs"), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := diskspace.Floor{Dir: "/data", MinFree: c.minFree, Statfs: func(string) (uint64, uint64, error) {
				return c.free, c.total, c.statErr
			}}
			err := f.Check()
			if got := errors.Is(err, diskspace.ErrLow); got != c.wantLow {
				t.Fatalf("Check() = %v, want low %v", err, c.wantLow)
			}
			if c.wantLow && !strings.Contains(err.Error(), c.wantInDetail) {
				t.Fatalf("Check() = %v, want it to say %q", err, c.wantInDetail)
			}
		})
	}
	// The real file system answers.
	if err := (diskspace.Floor{Dir: t.TempDir(), MinFree: 1}).Check(); err != nil {
		t.Fatalf("a 1-byte floor on a temp dir: %v", err)
	}
}

// TestCheckReserve: space promised (homes that may still grow) counts as
// used: the floor must hold after it.
func TestCheckReserve(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	cases := []struct {
		name          string
		minFree       int64
		free, reserve uint64
		wantLow       bool
		wantInDetail  string
	}{
		{"fits above the floor", 0, 12 * gib, 10 * gib, false, ""},
		{"exactly the floor left", 0, 11 * gib, 10 * gib, false, ""},
		{"one byte short", 0, 11*gib - 1, 10 * gib, true, "may grow by 10240 MiB"},
		{"already below the floor", 0, gib / 2, 0, true, "less than the floor of 1024 MiB"},
		{"off", -1, 0, 100 * gib, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := diskspace.Floor{Dir: "/homes", MinFree: c.minFree, Statfs: func(string) (uint64, uint64, error) {
				return c.free, 100 * gib, nil
			}}
			err := f.CheckReserve(c.reserve)
			if got := errors.Is(err, diskspace.ErrLow); got != c.wantLow {
				t.Fatalf("CheckReserve(%d) = %v, want low %v", c.reserve, err, c.wantLow)
			}
			if c.wantLow && !strings.Contains(err.Error(), c.wantInDetail) {
				t.Fatalf("CheckReserve() = %v, want it to say %q", err, c.wantInDetail)
			}
		})
	}
}
