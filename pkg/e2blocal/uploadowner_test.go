//go:build linux

package e2blocal

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// TestUploadOwnersInSandbox: uploads between the sandbox's two users leave
// what a direct write by that user would: a replaced file keeps its owner,
// a writable file in a directory the user cannot create in is written in
// place, and a new file there is refused.
func TestUploadOwnersInSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a second sandbox user needs root on the host (TestRootAndSudo covers the single-user case)")
	}
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, nil)
	setup := "mkdir -p /opt/locked && printf old > /opt/locked/f && chown user:user /opt/locked/f && " +
		"printf old > /home/user/rootfile && chmod 666 /home/user/rootfile && " +
		"printf old > /home/user/mine && chown user:user /home/user/mine"
	if r := runAs(t, rt, sb, "root", setup); r.err != nil || r.exit != 0 {
		t.Fatalf("setup: %+v", r)
	}
	upload := func(user, path, body string) int {
		t.Helper()
		q := url.Values{"path": {path}, "username": {user}}
		req, err := http.NewRequest("POST", rt.SandboxURL()+"/files?"+q.Encode(), strings.NewReader(body))
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
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, user, path string
		want             int
		check, expect    string
	}{
		{"user's file in a root directory", "user", "/opt/locked/f", 200, "stat -c '%U %a' /opt/locked/f; cat /opt/locked/f", "user 644\nnew"},
		{"new file in a root directory", "user", "/opt/locked/g", 403, "ls /opt/locked", "f\n"},
		{"root's world-writable file in the user's home", "user", "/home/user/rootfile", 200, "stat -c '%U %a' /home/user/rootfile; cat /home/user/rootfile", "root 666\nnew"},
		{"root writing the user's file", "root", "/home/user/mine", 200, "stat -c '%U' /home/user/mine; cat /home/user/mine", "user\nnew"},
	} {
		if got := upload(c.user, c.path, "new"); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
			continue
		}
		if got := runAs(t, rt, sb, "root", c.check+"; ls -A /opt/locked /home/user | grep -c sbx-upload || true"); got.stdout != c.expect+"0\n" {
			t.Errorf("%s: %q, want %q", c.name, got.stdout, c.expect+"0\n")
		}
	}
}
