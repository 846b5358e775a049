//go:build linux

package e2blocal

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/envd"
)

// TestSignedURLWithoutSandboxID: a signed file URL on the bare sandbox
// address, as the SDK builds it with E2B_SANDBOX_URL set, reaches the sandbox
// whose access token made the signature.
func TestSignedURLWithoutSandboxID(t *testing.T) {
	rt := startRuntime(t, Config{})
	secure := map[string]any{"templateID": "base", "secure": true}
	a, b := createSandbox(t, rt, secure), createSandbox(t, rt, secure)
	if a.EnvdAccessToken == "" || b.EnvdAccessToken == "" {
		t.Fatalf("secure sandboxes without tokens: %+v %+v", a, b)
	}
	mustRun(t, rt, a, "echo from-a > /home/user/f.txt")
	mustRun(t, rt, b, "echo from-b > /home/user/f.txt")
	exp := time.Now().Add(time.Minute).Unix()
	signed := func(sb sandboxBody, op, path string, exp int64) string {
		sig := envd.FileSignature(path, op, "user", sb.EnvdAccessToken, &exp)
		q := url.Values{"path": {path}, "username": {"user"}, "signature": {sig}, "signature_expiration": {strconv.FormatInt(exp, 10)}}
		return rt.SandboxURL() + "/files?" + q.Encode()
	}
	cases := []struct {
		name     string
		method   string
		url      string
		body     any
		want     int
		wantBody string
	}{
		{"read from b", "GET", signed(b, "read", "/home/user/f.txt", exp), nil, 200, "from-b\n"},
		{"read from a", "GET", signed(a, "read", "/home/user/f.txt", exp), nil, 200, "from-a\n"},
		{"same URL again (remembered)", "GET", signed(b, "read", "/home/user/f.txt", exp), nil, 200, "from-b\n"},
		{"write to a", "POST", signed(a, "write", "/home/user/up.txt", exp), "uploaded", 200, ""},
		{"read signature used to write", "POST", signed(a, "read", "/home/user/up.txt", exp), "x", 401, ""},
		{"forged signature", "GET", rt.SandboxURL() + "/files?path=/home/user/f.txt&signature=v1_" + strings.Repeat("A", 43), nil, 401, ""},
		{"expired, routed to its sandbox which refuses it", "GET", signed(b, "read", "/home/user/f.txt", time.Now().Add(-time.Minute).Unix()), nil, 401, ""},
		{"unsigned", "GET", rt.SandboxURL() + "/files?path=/home/user/f.txt", nil, 502, ""},
	}
	for _, c := range cases {
		r := do(t, c.method, c.url, c.body, map[string]string{"Content-Type": "application/octet-stream"})
		if r.status != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.want, r.body)
			continue
		}
		if c.wantBody != "" && string(r.body) != c.wantBody {
			t.Errorf("%s: body %q, want %q", c.name, r.body, c.wantBody)
		}
	}
	if got := strings.TrimSpace(mustRun(t, rt, a, "cat /home/user/up.txt")); got != "uploaded" {
		t.Errorf("upload through a signed URL stored %q", got)
	}
	if strings.Contains(mustRun(t, rt, b, "ls /home/user"), "up.txt") {
		t.Error("the upload reached the other sandbox")
	}
	// A killed sandbox's remembered signatures route nowhere.
	url := signed(b, "read", "/home/user/f.txt", exp)
	if r := api(t, rt, "DELETE", "/sandboxes/"+b.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", url, nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("signature of a killed sandbox: %d %s", r.status, r.body)
	}
}

func TestSignedScanBudget(t *testing.T) {
	t.Parallel()
	sr := newSignedRouter()
	now := time.Unix(1000, 0)
	for i := range signedScanBurst {
		if !sr.take(now) {
			t.Fatalf("scan %d refused within the burst", i)
		}
	}
	if sr.take(now) {
		t.Fatal("scan past the burst allowed")
	}
	// The budget refills at signedScanRate a second.
	later := now.Add(100 * time.Millisecond)
	n := 0
	for sr.take(later) {
		n++
	}
	if want := signedScanRate / 10; n != want {
		t.Errorf("%d scans after 100 ms, want %d", n, want)
	}
}
