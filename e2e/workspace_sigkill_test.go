package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestWorkspaceSurvivesServeKilled runs `sessionbox serve`, lets the reaper
// take its throttled checkpoint after some work, kills serve with SIGKILL
// (no stop, no checkpoint on the way out) and starts it again on the same
// data dir: the work and the package installed before it are back (the
// killed sandbox's home, adopted by the new one, as root; the workspace
// restored otherwise).
func TestWorkspaceSurvivesServeKilled(t *testing.T) {
	t.Parallel()
	const key = "sbx_workspace0123456789abcdef"
	serve := newServeProc(t, key, "--reap-interval", "300ms", "--checkpoint-interval-secs", "1")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client.New(serve.URL(), key, nil)
	const sid = "ws-sigkill"

	serve.start(t)
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "open('work.txt', 'w').write('saved by the reaper')"}, nil)
	if err != nil || !res.Success {
		t.Fatalf("write: %+v %v", res, err)
	}
	installOverClient(t, c, sid)
	installed := time.Now()
	// The session stays in use, as a chat's would, until the reaper has
	// saved it after the install: a checkpoint that was under way during
	// the install is not enough.
	testwait.Until(t, time.Minute, func() error {
		if res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "1"}, nil); err != nil || !res.Success {
			t.Fatalf("execute: %+v %v", res, err)
		}
		st, err := c.Status(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastCheckpoint == nil || !st.LastCheckpoint.At.After(installed) {
			return fmt.Errorf("the reaper took no checkpoint after the install: %+v", st)
		}
		return nil
	})
	serve.kill(t)

	serve.start(t)
	res, err = c.Execute(ctx, sid, client.ExecuteRequest{Code: "import wsdemo\nopen('work.txt').read() + ' ' + wsdemo.VALUE"}, nil)
	adopted := os.Geteuid() == 0 // homes are images that outlive serve
	if err != nil || !res.Success || !res.Restarted || !adopted && (res.Restored == nil || res.Restored.Files < 2) ||
		len(res.Results) == 0 || res.Results[0].Text != "saved by the reaper kept" {
		t.Fatalf("after SIGKILL and a new serve: %s %v", fmt.Sprintf("%+v", res), err)
	}
}

// installOverClient installs a wheel built here through the API, from an
// index served inside the sandbox (sandboxes have no network).
func installOverClient(t *testing.T, c *client.Client, sid string) {
	t.Helper()
	ctx := t.Context()
	name, wheel := buildWheel(t, "wsdemo", "1.0", "kept")
	page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>`, name, name)
	for path, body := range map[string]string{"index/wsdemo/" + name: string(wheel), "index/wsdemo/index.html": page} {
		if _, err := c.Upload(ctx, sid, "/home/user/"+path, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatalf("upload %s: %v", path, err)
		}
	}
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "import subprocess, socket, sys, time\n" +
		"srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8766']," +
		" stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
		"for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8766), 0.2).close(); break\n" +
		"    except OSError: time.sleep(0.05)\n"}, nil)
	if err != nil || !res.Success {
		t.Fatalf("index server: %+v %v", res, err)
	}
	inst, err := c.Install(ctx, sid, []string{"wsdemo==1.0"}, "http://127.0.0.1:8766/")
	if err != nil || !inst.Success {
		t.Fatalf("install: %+v %v", inst, err)
	}
	if res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "srv.kill(); srv.wait()"}, nil); err != nil || !res.Success {
		t.Fatalf("stop the index server: %+v %v", res, err)
	}
}
