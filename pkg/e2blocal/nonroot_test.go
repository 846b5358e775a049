//go:build linux

package e2blocal

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// nonRootUID runs the non-root suite; it is below the sandbox uid range.
const nonRootUID = 199999

// TestUnprivilegedRuntime re-runs lifecycle and isolation tests with the
// runtime itself as an unprivileged uid: no cgroups (pause by SIGSTOP,
// limits by rlimits only) and every sandbox under the runtime's own uid.
func TestUnprivilegedRuntime(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	if os.Geteuid() != 0 {
		t.Log("already unprivileged: the whole suite covers this mode")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The build cache is private to root: give the uid its own copy.
	dir, err := os.MkdirTemp("", "e2bl-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "e2blocal.test")
	if err := jail.CopyFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, nonRootUID, nonRootUID); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^(TestCreateRouteKill|TestRunCommand|TestPauseResumeKeepsMemory|TestAutoResume|"+
		"TestIsolationFilesystem|TestIsolationIdentity|TestIsolationNoHostLoopback|TestIsolationResourceBombs|TestKillRemovesTree|TestKillPausedAndConnectRearms|TestInternetAccess|"+
		"TestRootAndSudo|TestSeccompDeniesInSandbox|TestSandboxImage|TestAdoptPlainHome|TestOrphanExpires)$")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nonRootUID, Gid: nonRootUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged run: %v\n%s", err, out)
	}
}
