//go:build linux

package jail

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
		if got := runBase(); got != "/dev/shm" {
			t.Errorf("XDG_RUNTIME_DIR=%q: runBase() = %q, want /dev/shm", dir, got)
		}
	}
}

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
	base := runBase()
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

	l, err := NewLayout(t.TempDir(), "", "test", false, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("the dead runtime's %s is still there", stale)
	}
	var st unix.Statfs_t
	fi, err := os.Stat(l.runRoot)
	if err != nil || unix.Statfs(l.runRoot, &st) != nil {
		t.Fatalf("socket dir %s: %v", l.runRoot, err)
	}
	if !strings.HasPrefix(l.runRoot, base+"/") || st.Type != unix.TMPFS_MAGIC || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket dir %s: on tmpfs %v, mode %v; want a 0700 dir below %s", l.runRoot, st.Type == unix.TMPFS_MAGIC, fi.Mode().Perm(), base)
	}
	if n := len(l.SocketPath("abcdefghijklmnopqrst")); n > 107 {
		t.Errorf("socket path of %d bytes, over the limit", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(l.runRoot); err == nil {
		t.Errorf("Close left %s", l.runRoot)
	}
}

// TestAgentSource: Config.Agent must name an executable regular file;
// anything else fails Start with an error naming the path.
func TestAgentSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := write("agent", 0o755)
	own, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src, want, err string
	}{
		{"own binary", "", own, ""},
		{"executable", exe, exe, ""},
		{"missing", filepath.Join(dir, "none"), "", "no such file"},
		{"not executable", write("plain", 0o644), "", "not an executable file"},
		{"a directory", dir, "", "not an executable file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := agentSource(c.src)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.src) {
					t.Fatalf("agentSource(%q) = %q, %v; want an error naming it and %q", c.src, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("agentSource(%q) = %q, %v; want %q", c.src, got, err, c.want)
			}
		})
	}
}
