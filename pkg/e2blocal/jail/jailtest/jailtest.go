//go:build linux

// Package jailtest holds what the isolation engine's tests and the
// runtime's share: finding a cgroup v2 hierarchy to manage and reading a
// process's group in it. It imports nothing of jail, so jail's own tests
// may use it.
package jailtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup hierarchies are mounted (jail.CgroupRoot).
const cgroupRoot = "/sys/fs/cgroup"

// V2Root finds a unified hierarchy this process may manage: the host's own
// on a v2 host, the "unified" mount of a hybrid one. It skips t without
// root or without such a hierarchy.
func V2Root(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("managing cgroup v2 groups here needs root")
	}
	for _, dir := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir
		}
	}
	t.Skip("no cgroup v2 hierarchy mounted")
	return ""
}

// V2Member reports whether pid's unified-hierarchy group is dir, a group
// below root.
func V2Member(t testing.TB, root, dir string, pid int) bool {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	want := "0::" + strings.TrimPrefix(dir, root) + "\n"
	return strings.Contains(string(data), want)
}
