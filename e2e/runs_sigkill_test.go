package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// serveOnDir starts `sessionbox serve` (built once per test) on addr and
// dir and waits for /healthz.
func serveOnDir(t *testing.T, bin, addr, dir, key string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", dir, "--api-keys", "alice="+key, "--min-free-mib", "-1")
	cmd.Env = os.Environ()
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %v\n%s", err, logs.String())
		}
	}
}

// TestRunsSurviveServeKilled accepts runs (202), kills serve with SIGKILL
// while four of them run and six wait in the queue, and starts serve again
// on the same data dir: every accepted run ends. The queued ones run; the
// ones running at the kill end failed, saying why, and are not run twice.
func TestRunsSurviveServeKilled(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sessionbox")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/sessionbox/sessionbox/cmd/sessionbox").CombinedOutput(); err != nil {
		t.Fatalf("build sessionbox: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	dir := t.TempDir()
	const key = "sbx_runsigkill0123456789abcdef"
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client.New("http://"+addr, key, nil)

	first := serveOnDir(t, bin, addr, dir, key)
	var running, queued []string
	for i := range 4 { // local mode's four run workers, all busy
		acc, err := c.SubmitRun(ctx, fmt.Sprintf("long-%d", i), client.RunRequest{Code: "import time\ntime.sleep(600)", TimeoutSecs: 900})
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, acc.RunID)
	}
	for _, id := range running {
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			r, err := c.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == session.RunRunning {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s never started: %+v", id, r)
			}
		}
	}
	for i := range 6 {
		acc, err := c.SubmitRun(ctx, "quick", client.RunRequest{Code: fmt.Sprintf("%d * 7", i)})
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, acc.RunID)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	serveOnDir(t, bin, addr, dir, key)
	lost := 0
	for _, id := range append(append([]string{}, running...), queued...) {
		r, err := c.WaitRun(ctx, id, 200*time.Millisecond)
		if err != nil {
			t.Errorf("run %s after the restart: %v", id, err)
			lost++
			continue
		}
		wantRunning := strings.HasPrefix(r.SessionID, "long-")
		switch {
		case wantRunning && (r.Status != session.RunFailed || !strings.Contains(r.Error, "service stopped")):
			t.Errorf("run %s, running at the kill: %s %q, want failed saying the service stopped", id, r.Status, r.Error)
		case !wantRunning && r.Status != session.RunSucceeded:
			t.Errorf("run %s, queued at the kill: %s %q, want succeeded", id, r.Status, r.Error)
		}
	}
	t.Logf("accepted runs lost at kill -9: %d of %d", lost, len(running)+len(queued))
}
