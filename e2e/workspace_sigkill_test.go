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
)

// TestWorkspaceSurvivesServeKilled runs `sessionbox serve`, lets the reaper
// take its throttled checkpoint after some work, kills serve with SIGKILL
// (no stop, no checkpoint on the way out) and starts it again on the same
// data dir: the work is back.
func TestWorkspaceSurvivesServeKilled(t *testing.T) {
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
	const key = "sbx_workspace0123456789abcdef"
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	serve := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", dir, "--api-keys", "alice="+key,
			"--reap-interval", "300ms", "--checkpoint-interval-secs", "1", "--min-free-mib", "-1")
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
				t.Fatalf("serve did not come up: %v", err)
			}
		}
	}
	c := client.New("http://"+addr, key, nil)
	const sid = "ws-sigkill"

	first := serve()
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "open('work.txt', 'w').write('saved by the reaper')"}, nil)
	if err != nil || !res.Success {
		t.Fatalf("write: %+v %v", res, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		st, err := c.Status(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastCheckpoint != nil && st.LastCheckpoint.Files == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reaper took no checkpoint: %+v", st)
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	serve()
	res, err = c.Execute(ctx, sid, client.ExecuteRequest{Code: "open('work.txt').read()"}, nil)
	if err != nil || !res.Success || !res.Restarted || res.Restored == nil || res.Restored.Files != 1 ||
		len(res.Results) == 0 || res.Results[0].Text != "saved by the reaper" {
		t.Fatalf("after SIGKILL and a new serve: %s %v", fmt.Sprintf("%+v", res), err)
	}
}
