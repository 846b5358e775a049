//go:build linux

package jail

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestStaleTempDirsByDataDir: every runtime's temp dirs share one parent,
// so a runtime starting on one data dir salvages the homes a dead runtime
// of the same data dir left there and removes the dirs of data dirs that
// are gone, but leaves another live data dir's (its own next runtime
// adopts those homes).
func TestStaleTempDirsByDataDir(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dataDir, other := t.TempDir(), t.TempDir()
	stale := func(name, owner, key, id string) string {
		d := filepath.Join(os.TempDir(), fmt.Sprintf("e2bl-state-%d-%s", dead.Process.Pid, name))
		homes := filepath.Join(d, "rt-1-x", "sandboxes")
		if err := os.MkdirAll(homes, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(d) })
		files := map[string]string{filepath.Join(homes, key+".img"): "home of " + id, filepath.Join(homes, key+".id"): id}
		if owner != "" {
			files[filepath.Join(d, ownerFile)] = owner
		}
		for p, body := range files {
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	mine := stale("mine", dataDir, "k1", "sbxmine")
	theirs := stale("theirs", other, "k2", "sbxtheirs")
	gone := stale("gone", filepath.Join(other, "removed"), "k3", "sbxgone")
	legacy := stale("legacy", "", "k4", "sbxlegacy")

	l, err := NewLayout(dataDir, "", "test", false, true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	for _, d := range []string{mine, gone, legacy} {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("the dead runtime's %s is still there", d)
		}
	}
	if b, err := os.ReadFile(filepath.Join(theirs, "rt-1-x", "sandboxes", "k2.img")); err != nil || string(b) != "home of sbxtheirs" {
		t.Errorf("another data dir's home: %q %v; want it left where it was", b, err)
	}
	if b, err := os.ReadFile(l.OrphanImage("sbxmine")); err != nil || string(b) != "home of sbxmine" {
		t.Errorf("this data dir's home: %q %v; want it salvaged", b, err)
	}
	for _, id := range []string{"sbxtheirs", "sbxgone", "sbxlegacy"} {
		if _, err := os.Lstat(l.OrphanImage(id)); err == nil {
			t.Errorf("the home of %s, not this data dir's, was salvaged", id)
		}
	}
}

// TestSalvagePlainHomes: a dead runtime's plain-dir homes (no image: a
// runtime that is not root) are kept as orphans named by sandbox id,
// owner only, with their files; a warm tree's home (never handed to a
// create, no id file) and an image's mount point are not; an orphan the
// dead runtime had salvaged itself keeps its salvage time, and
// RemoveOrphans drops those salvaged before the cutoff.
func TestSalvagePlainHomes(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	rt := filepath.Join(dataDir, fmt.Sprintf("rt-%d-x", dead.Process.Pid))
	old := time.Now().Add(-48 * time.Hour)
	files := map[string]string{
		"sandboxes/k1/acked/1.txt": "write 1", "sandboxes/k1.id": "sbxlive",
		"sandboxes/k2/warm.txt": "",
		"sandboxes/k3.img":      "image", "sandboxes/k3.id": "sbximage", "sandboxes/k3/.keep": "",
		"orphans/sbxolder/a.txt": "older",
	}
	for p, body := range files {
		p = filepath.Join(rt, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(filepath.Join(rt, "orphans", "sbxolder"), old, old); err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(dataDir, "", "test", false, true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if _, err := os.Lstat(rt); err == nil {
		t.Errorf("the dead runtime's dir is still there")
	}
	if b, err := os.ReadFile(filepath.Join(l.OrphanHome("sbxlive"), "acked", "1.txt")); err != nil || string(b) != "write 1" {
		t.Errorf("the live sandbox's home: %q %v; want it salvaged", b, err)
	}
	if b, err := os.ReadFile(l.OrphanImage("sbximage")); err != nil || string(b) != "image" {
		t.Errorf("the image home: %q %v; want it salvaged", b, err)
	}
	entries, _ := os.ReadDir(l.OrphanDir())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"sbximage.img", "sbxlive", "sbxolder"}; !slices.Equal(names, want) {
		t.Errorf("orphans %v, want %v (no warm home, no mount point)", names, want)
	}
	if fi, err := os.Stat(l.OrphanDir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("orphan dir: %v %v; want owner only", fi, err)
	}
	n, err := l.RemoveOrphans(time.Now().Add(-24 * time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("RemoveOrphans = %d, %v; want the older orphan only", n, err)
	}
	if _, err := os.Lstat(l.OrphanHome("sbxolder")); err == nil {
		t.Error("an orphan salvaged two days ago is still there")
	}
	if _, err := os.Lstat(l.OrphanHome("sbxlive")); err != nil {
		t.Errorf("an orphan salvaged now was removed: %v", err)
	}
}
