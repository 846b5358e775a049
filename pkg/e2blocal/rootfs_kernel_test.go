//go:build linux

package e2blocal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// hostUsrRootfs builds a root filesystem whose /usr is the host's, bind
// mounted read-only, with the host's merged-usr links: a template with
// Python in it. It needs root (the mount); the mount is detached before
// the directory is removed, and nothing is removed if that fails.
func hostUsrRootfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind-mounting the host's /usr into a template's rootfs needs root")
	}
	dir, err := os.MkdirTemp("", "template-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	usr := filepath.Join(root, "usr")
	mustMkdir(t, usr)
	if err := unix.Mount("/usr", usr, "", unix.MS_BIND, ""); err != nil {
		os.RemoveAll(dir)
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(usr, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s (left in place): %v", usr, err)
			return
		}
		os.RemoveAll(dir)
	})
	if err := unix.Mount("", usr, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if target, err := os.Readlink("/" + l); err == nil {
			if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeFile(t, filepath.Join(root, "etc/os-release"), "ID=pyroot\n")
	return dir
}

// TestTemplateRootfsInterpreter: a code-interpreter template with its own
// root filesystem runs its kernel on that rootfs's Python, compiled from
// source (the runtime's compiled kernel is for the host's Python), with
// the template's env vars.
func TestTemplateRootfsInterpreter(t *testing.T) {
	t.Parallel()
	dir := hostUsrRootfs(t)
	def := writeDef(t, dir, map[string]any{"rootfs": "rootfs", "builtin": TemplateCodeInterpreter, "envs": map[string]string{"FROM": "template"}})
	rt := startRuntime(t, Config{WarmPool: -1, Templates: map[string]string{"py": def}})
	sb := createSandbox(t, rt, map[string]any{"templateID": "py"})
	out := execute(t, rt, sb, "import os\nprint(open('/etc/os-release').read().strip(), os.environ['FROM'])\n6 * 7")
	if !strings.Contains(out, `ID=pyroot template\n`) || !strings.Contains(out, `"42"`) {
		t.Errorf("execute: %s", out)
	}
}
