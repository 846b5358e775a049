package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestPrivateSandboxes: a private adapter's sandboxes (local mode's) work
// as usual for the service, also through a fresh adapter that learns the
// tokens from GetInfo (a restart's cold cache), while a caller who knows
// only the sandbox's id reaches neither a port served inside nor the
// interpreter's /contexts, and one holding the traffic token does.
func TestPrivateSandboxes(t *testing.T) {
	rt := runtime(t)
	newAdapter := func() (*sandboxes.E2B, *e2b.Client) {
		c, err := e2b.New(e2b.Config{APIKey: "e2b_0123456789abcdef", APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL(),
			RequestTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return sandboxes.NewWith(c, sandboxes.Options{Private: true}), c
	}
	a, client := newAdapter()
	ctx := context.Background()
	info := create(t, a, nil)
	serve := "import subprocess, socket, time\n" +
		"subprocess.Popen(['python3', '-m', 'http.server', '8000'], cwd='/tmp', stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
		"for _ in range(100):\n" +
		"    try:\n        socket.create_connection(('127.0.0.1', 8000), 1).close(); break\n" +
		"    except OSError:\n        time.sleep(0.1)\n"
	if res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: serve}, nil); err != nil || !res.Success {
		t.Fatalf("start a server inside: %+v %v", res, err)
	}
	if _, err := a.CreateContext(ctx, info.ID, session.ContextRequest{}); err != nil {
		t.Fatalf("the service's own context create: %v", err)
	}
	fresh, _ := newAdapter()
	if _, err := fresh.CreateContext(ctx, info.ID, session.ContextRequest{}); err != nil {
		t.Fatalf("a fresh adapter (tokens from GetInfo): %v", err)
	}
	if res, err := fresh.Execute(ctx, info.ID, session.ExecRequest{Code: "6 * 7"}, nil); err != nil || len(res.Results) != 1 || res.Results[0].Text != "42" {
		t.Fatalf("a fresh adapter's execute: %+v %v", res, err)
	}
	got, err := client.GetInfo(ctx, info.ID)
	if err != nil || got.TrafficAccessToken == nil || *got.TrafficAccessToken == "" {
		t.Fatalf("GetInfo has no traffic token: %+v %v", got, err)
	}
	token := *got.TrafficAccessToken
	for _, c := range []struct {
		port, path string
	}{{"8000", "/"}, {"49999", "/contexts"}} {
		for _, tok := range []string{"", "wrong", token} {
			req, _ := http.NewRequestWithContext(ctx, "GET", rt.SandboxURL()+c.path, nil)
			req.Header.Set("E2b-Sandbox-Id", info.ID)
			req.Header.Set("E2b-Sandbox-Port", c.port)
			if tok != "" {
				req.Header.Set("E2B-Traffic-Access-Token", tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusForbidden
			if tok == token {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("port %s %s with token %q: %d, want %d: %.200s", c.port, c.path, tok, resp.StatusCode, want, body)
			}
		}
	}
}
