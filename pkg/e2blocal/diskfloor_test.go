//go:build linux

package e2blocal

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSpaceCheckRefusesCreatesAndUploads: while the space check fails,
// creates and uploads get 507 with its message; reads go on, and once it
// passes again so does everything.
func TestSpaceCheckRefusesCreatesAndUploads(t *testing.T) {
	var low atomic.Bool
	const msg = "not enough free disk space: 10 MiB free, below the floor of 1024 MiB"
	rt := startRuntime(t, Config{SpaceCheck: func() error {
		if low.Load() {
			return errors.New(msg)
		}
		return nil
	}})
	sb := createSandbox(t, rt, nil)
	upload := func(path string) (int, apiError) {
		t.Helper()
		req, err := http.NewRequest("POST", rt.SandboxURL()+"/files?path="+path, strings.NewReader("data"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(hdrSandboxID, sb.SandboxID)
		req.Header.Set(hdrSandboxPort, envdPort)
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body apiError
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}

	low.Store(true)
	r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "base"})
	var body apiError
	r.decode(t, &body)
	if r.status != http.StatusInsufficientStorage || body.Code != r.status || body.Message != msg {
		t.Fatalf("create below the floor: %d %s", r.status, r.body)
	}
	if status, body := upload("/home/user/refused"); status != http.StatusInsufficientStorage || body.Message != msg {
		t.Fatalf("upload below the floor: %d %+v", status, body)
	}
	// What needs no new space still works.
	if got := mustRun(t, rt, sb, "ls -A /home/user | grep -c refused || true"); got != "0\n" {
		t.Fatalf("the refused upload left %q", got)
	}

	low.Store(false)
	if status, body := upload("/home/user/accepted"); status != http.StatusOK {
		t.Fatalf("upload with space again: %d %+v", status, body)
	}
	createSandbox(t, rt, nil)
}
