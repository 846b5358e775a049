//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
)

// TestTemplateGoClient drives templates from definition files through the
// Go E2B client, as a user's program would: a template without its own
// rootfs whose start command serves HTTP (reached on its port through the
// routing address, ready before the create returns, listed with its
// start_cmd tag), and a template with a rootfs whose files the client
// reads; a template the runtime lacks fails the create.
func TestTemplateGoClient(t *testing.T) {
	t.Parallel()
	dir := tinyRootfs(t, true)
	web := writeDef(t, t.TempDir(), map[string]any{
		"startCmd": `echo "served $TOKEN" > index.html && exec python3 -m http.server 8000 --bind 127.0.0.1`,
		"readyCmd": `python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8000))'`,
		"envs":     map[string]string{"TOKEN": "t0k"},
		"workdir":  "/home/user/site",
	})
	tiny := writeDef(t, dir, map[string]any{"rootfs": "rootfs"})
	rt := startRuntime(t, Config{WarmPool: -1, APIKey: testKey, Templates: map[string]string{"web": web, "tiny": tiny}})
	c, err := e2b.New(e2b.Config{APIKey: testKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sb, err := c.Create(ctx, e2b.CreateParams{Template: "web"})
	if err != nil {
		t.Fatalf("create web: %v", err)
	}
	defer sb.Kill(context.Background())
	resp, err := http.Get(rt.SandboxURL() + "/_sandboxes/" + sb.ID + "/8000/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "served t0k\n" {
		t.Errorf("start command's server: %s %q", resp.Status, body)
	}
	procs, err := sb.Commands().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !startCmdListed(procs) {
		t.Errorf("start command not listed: %+v", procs)
	}

	tb, err := c.Create(ctx, e2b.CreateParams{Template: "tiny"})
	if err != nil {
		t.Fatalf("create tiny: %v", err)
	}
	defer tb.Kill(context.Background())
	marker, err := tb.Files().ReadAll(ctx, "/marker", e2b.ReadOptions{})
	if err != nil || string(marker) != "template-marker\n" {
		t.Errorf("rootfs marker through the client: %q %v", marker, err)
	}
	res, err := tb.Commands().Run(ctx, "cat /etc/os-release; [ -e /usr/bin/python3 ] || echo no-python", e2b.CommandOptions{})
	if err != nil || res.Stdout != "ID=tiny\nno-python\n" {
		t.Errorf("run in the rootfs: %+v %v", res, err)
	}

	_, err = c.Create(ctx, e2b.CreateParams{Template: "missing"})
	if !errors.Is(err, e2b.ErrNotFound) || !strings.Contains(err.Error(), "template 'missing' not found") {
		t.Errorf("create of an unknown template: %v", err)
	}
}

func startCmdListed(procs []e2b.ProcessInfo) bool {
	for _, p := range procs {
		if p.Tag == "start_cmd" {
			return true
		}
	}
	return false
}
