//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRootfsBinds: a template's top level is bound read-only, links kept as
// links, except the directories the runtime provides; /opt and /var are
// bound entry by entry around /opt/e2b and /var/tmp.
func TestRootfsBinds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "etc", "home/user", "proc", "tmp", "opt/e2b", "opt/tool", "var/tmp", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := RootfsBinds(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--symlink", "usr/bin", "/bin",
		"--ro-bind", root + "/marker", "/marker",
		"--ro-bind", root + "/usr", "/usr",
		"--perms", "0755", "--dir", "/opt",
		"--ro-bind", root + "/opt/tool", "/opt/tool",
		"--perms", "0755", "--dir", "/var",
		"--ro-bind", root + "/var/lib", "/var/lib",
	}
	if !slices.Equal(args, want) {
		t.Errorf("binds\n got %q\nwant %q", args, want)
	}
	if _, err := RootfsBinds(filepath.Join(root, "nope")); err == nil {
		t.Error("a missing rootfs gave binds")
	}
}

// TestAgentRunsIn: a dynamically linked agent needs its loader in the
// template's rootfs, found through the rootfs's own links.
func TestAgentRunsIn(t *testing.T) {
	t.Parallel()
	interp, err := elfInterpreter("/bin/sh")
	if err != nil || interp == "" {
		t.Skipf("/bin/sh is not a dynamic ELF here (%q, %v)", interp, err)
	}
	empty := t.TempDir()
	if err := AgentRunsIn("/bin/sh", empty); err == nil || !strings.Contains(err.Error(), "lacks its loader "+interp) {
		t.Errorf("empty rootfs: %v", err)
	}
	// The loader behind a merged-usr link, as Debian lays it out.
	withLoader := t.TempDir()
	dir := filepath.Dir(interp)
	if err := os.MkdirAll(filepath.Join(withLoader, "usr", dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr"+dir, filepath.Join(withLoader, dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withLoader, "usr", interp), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := AgentRunsIn("/bin/sh", withLoader); err != nil {
		t.Errorf("rootfs with the loader: %v", err)
	}
	notELF := filepath.Join(empty, "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := AgentRunsIn(notELF, withLoader); err == nil {
		t.Error("a script passed as the agent")
	}
}
