//go:build linux

package jail

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunBaseFallsBack: without a usable tmpfs named by XDG_RUNTIME_DIR,
// /dev/shm is next, and a relative, missing or non-tmpfs XDG_RUNTIME_DIR
// is ignored.
func TestRunBaseFallsBack(t *testing.T) {
	var shm unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &shm); err != nil || shm.Type != unix.TMPFS_MAGIC {
		t.Fatalf("this test needs /dev/shm on a tmpfs: %v", err)
	}
	dirs := []string{"relative/dir", "/nonexistent"}
	// A directory on a disk file system: the test's temp dir, unless /tmp
	// is itself a tmpfs, then the package's own directory.
	for _, d := range []string{t.TempDir(), "."} {
		var st unix.Statfs_t
		if abs, err := filepath.Abs(d); err == nil && unix.Statfs(abs, &st) == nil && st.Type != unix.TMPFS_MAGIC {
			dirs = append(dirs, abs)
			break
		}
	}
	for _, dir := range dirs {
		t.Setenv("XDG_RUNTIME_DIR", dir)
		if got := RunBase(); got != "/dev/shm" {
			t.Errorf("XDG_RUNTIME_DIR=%q: runBase() = %q, want /dev/shm", dir, got)
		}
	}
}
