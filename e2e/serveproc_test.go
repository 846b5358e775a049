package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// buildSessionbox builds the sessionbox binary into a directory of the
// test's and returns its path.
func buildSessionbox(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sessionbox")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/sessionbox/sessionbox/cmd/sessionbox").CombinedOutput(); err != nil {
		t.Fatalf("build sessionbox: %v\n%s", err, out)
	}
	return bin
}

// serveProc runs `sessionbox serve` as its own process on one address and
// data dir, so a test can kill it (SIGKILL: no shutdown, no checkpoint)
// and start it again on the same state.
type serveProc struct {
	bin, addr, dir, key string
	flags               []string            // beyond address, data dir and key
	cred                *syscall.Credential // nil: serve runs as the test
	env                 []string            // with cred: serve's whole environment
	cmd                 *exec.Cmd
	logs                *lockedWriter
}

// newServeProc builds the binary and picks a free address and a data dir;
// key is alice's API key.
func newServeProc(t *testing.T, key string, flags ...string) *serveProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return &serveProc{bin: buildSessionbox(t), addr: addr, dir: t.TempDir(), key: key, flags: flags}
}

// URL is the API's base URL.
func (p *serveProc) URL() string { return "http://" + p.addr }

// start starts serve and waits until /healthz answers 200.
func (p *serveProc) start(t *testing.T) {
	t.Helper()
	args := append([]string{"serve", "--addr", p.addr, "--data-dir", p.dir, "--api-keys", "alice=" + p.key, "--min-free-mib", "-1"}, p.flags...)
	cmd := exec.Command(p.bin, args...)
	cmd.Env = os.Environ()
	if p.cred != nil {
		cmd.Env = p.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	logs := &lockedWriter{}
	p.logs = logs
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("serve (pid %d) printed:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	err := testwait.Poll(t, time.Minute, func() error {
		resp, err := http.Get(p.URL() + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthz answered %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("serve did not come up: %v\n%s", err, p.logs.String())
	}
}

// kill ends serve with SIGKILL and waits for it to be gone.
func (p *serveProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// asUser makes serve run as uid, as a runtime that is not root does: the
// binary, the data dir and a home and temp dir of its own where uid
// reaches them. Only root can run a process as another uid.
func (p *serveProc) asUser(t *testing.T, uid int) {
	t.Helper()
	base, err := os.MkdirTemp("", "serve-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	bin := filepath.Join(base, "sessionbox")
	if err := os.Rename(p.bin, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	p.bin, p.dir = bin, filepath.Join(base, "data")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{p.dir, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	p.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp}
}
