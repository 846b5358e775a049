//go:build linux

package e2blocal

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestSocketDirOnTmpfs: the agents' sockets live in a private 0700
// directory on a tmpfs when the host has one (here /dev/shm), which Close
// removes; a dead runtime's socket directory there is removed by the next
// runtime's start.
func TestSocketDirOnTmpfs(t *testing.T) {
	var shm unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &shm); err != nil || shm.Type != unix.TMPFS_MAGIC {
		t.Fatalf("this test needs /dev/shm on a tmpfs: %v", err)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	base := jail.RunBase()
	if base != "/dev/shm" {
		t.Fatalf("runBase() = %q, want /dev/shm", base)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, fmt.Sprintf("e2bl-run-%d-stale", dead.Process.Pid))
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(stale) })

	l, err := jail.NewLayout(t.TempDir(), "", "test", false, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if exists(stale) {
		t.Errorf("the dead runtime's %s is still there", stale)
	}
	var st unix.Statfs_t
	fi, err := os.Stat(l.RunRoot)
	if err != nil || unix.Statfs(l.RunRoot, &st) != nil {
		t.Fatalf("socket dir %s: %v", l.RunRoot, err)
	}
	if !strings.HasPrefix(l.RunRoot, base+"/") || st.Type != unix.TMPFS_MAGIC || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir %s: on tmpfs %v, mode %v; want a 0700 dir below %s", l.RunRoot, st.Type == unix.TMPFS_MAGIC, fi.Mode().Perm(), base)
	}
	if n := len(l.SocketPath("abcdefghijklmnopqrst")); n > 107 {
		t.Errorf("socket path of %d bytes, over the limit", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(l.RunRoot) {
		t.Errorf("Close left %s", l.RunRoot)
	}
}
