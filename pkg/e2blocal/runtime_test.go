//go:build linux

package e2blocal

import (
	"net/http"
	"strings"
	"testing"
)

func TestCreateRouteKill(t *testing.T) {
	rt := startRuntime(t, Config{})
	if r := do(t, "GET", rt.APIURL()+"/health", nil, nil); r.status != http.StatusOK {
		t.Fatalf("health: %d", r.status)
	}
	sb := createSandbox(t, rt, nil)
	if len(sb.SandboxID) != 20 || !validID.MatchString(sb.SandboxID) {
		t.Fatalf("bad id %q", sb.SandboxID)
	}
	if r := sbx(t, rt, sb.SandboxID, "49983", "GET", "/health", nil); r.status != http.StatusNoContent {
		t.Fatalf("envd health through proxy: %d %s", r.status, r.body)
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+sb.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	if r := sbx(t, rt, sb.SandboxID, "49983", "GET", "/health", nil); r.status != http.StatusBadGateway {
		t.Fatalf("health after kill: %d %s", r.status, r.body)
	}
}

func TestRunCommand(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "envVars": map[string]string{"FOO": "bar"}})
	out := mustRun(t, rt, sb, `echo "$(id -u):$(id -un):$HOME:$(pwd):$FOO"`)
	if got, want := strings.TrimSpace(out), "1000:user:/home/user:/home/user:bar"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
