package e2e

import (
	"net/http"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestLocalAllowedOrigins: local mode with AllowedOrigins (serve
// --allowed-origins) answers a preflight and a call from an allowed origin
// with that origin, refuses another origin's preflight with 403, and still
// serves the playground page, which needs no CORS (it calls its own origin).
func TestLocalAllowedOrigins(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	const app = "http://localhost:5173"
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice}, AllowedOrigins: []string{app}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	do := func(method, path, origin string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, svc.URL+path, nil)
		req.Header.Set("Origin", origin)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}
	for _, c := range []struct {
		name, method, path, origin string
		hdr                        map[string]string
		status                     int
		allow                      string
	}{
		{"allowed preflight", "OPTIONS", "/v1/sessions/s1/execute", app, preflight, http.StatusNoContent, app},
		{"other preflight", "OPTIONS", "/v1/sessions/s1/execute", "https://evil.example", preflight, http.StatusForbidden, ""},
		{"allowed call", "GET", "/v1/sessions", app, map[string]string{"Authorization": "Bearer " + alice.Secret}, http.StatusOK, app},
		{"other call", "GET", "/v1/sessions", "https://evil.example", map[string]string{"Authorization": "Bearer " + alice.Secret}, http.StatusOK, ""},
		{"playground page", "GET", "/", "https://evil.example", nil, http.StatusOK, ""},
	} {
		res := do(c.method, c.path, c.origin, c.hdr)
		if res.StatusCode != c.status || res.Header.Get("Access-Control-Allow-Origin") != c.allow {
			t.Errorf("%s: %d, Access-Control-Allow-Origin %q; want %d, %q", c.name, res.StatusCode,
				res.Header.Get("Access-Control-Allow-Origin"), c.status, c.allow)
		}
	}
}
