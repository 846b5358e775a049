//go:build linux

package e2blocal

import (
	"net/http"
	"strings"
	"testing"
)

// Sandbox URLs follow E2B's network.allowPublicTraffic: a sandbox's own
// servers are public by default; a private sandbox answers them, and its
// interpreter, only with its traffic token, which its servers never see;
// envd stays reachable with the envd token alone, as the SDKs send no
// traffic token there.
func TestTrafficAccessToken(t *testing.T) {
	rt := startRuntime(t, Config{})
	public := createSandbox(t, rt, nil)
	private := createSandbox(t, rt, map[string]any{"templateID": "base", "network": map[string]any{"allowPublicTraffic": false}})
	if public.TrafficAccessToken != nil {
		t.Fatalf("public sandbox has a traffic token %q", *public.TrafficAccessToken)
	}
	if private.TrafficAccessToken == nil || len(*private.TrafficAccessToken) < 32 {
		t.Fatalf("private sandbox's traffic token: %v", private.TrafficAccessToken)
	}
	token := *private.TrafficAccessToken
	// The server echoes the request headers it was given.
	const server = `cat > ~/echo.py <<'PY'
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = "".join(f"{k.lower()}: {v}\n" for k, v in self.headers.items()).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()
PY
nohup python3 ~/echo.py >/dev/null 2>&1 &
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.05; done`
	mustRun(t, rt, public, server)
	mustRun(t, rt, private, server)

	get := func(sb sandboxBody, port string, hdr map[string]string) reply {
		h := map[string]string{hdrSandboxID: sb.SandboxID, hdrSandboxPort: port}
		for k, v := range hdr {
			h[k] = v
		}
		return do(t, "GET", rt.SandboxURL()+"/", nil, h)
	}
	cases := []struct {
		name string
		sb   sandboxBody
		port string
		hdr  map[string]string
		want int
	}{
		{"public sandbox's server, no token", public, "8000", nil, http.StatusOK},
		{"private sandbox's server, no token", private, "8000", nil, http.StatusForbidden},
		{"private sandbox's server, wrong token", private, "8000", map[string]string{"E2B-Traffic-Access-Token": strings.Repeat("0", len(token))}, http.StatusForbidden},
		{"private sandbox's server, envd token instead", private, "8000", map[string]string{"X-Access-Token": private.EnvdAccessToken}, http.StatusForbidden},
		{"private sandbox's server, traffic token", private, "8000", map[string]string{"E2B-Traffic-Access-Token": token}, http.StatusOK},
		{"private sandbox's interpreter, no token", private, "49999", nil, http.StatusForbidden},
	}
	for _, c := range cases {
		r := get(c.sb, c.port, c.hdr)
		if r.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.want)
		}
		if r.status == http.StatusOK && strings.Contains(strings.ToLower(string(r.body)), "traffic-access-token") {
			t.Errorf("%s: the sandbox's server saw the traffic token: %s", c.name, r.body)
		}
	}
	if r := do(t, "GET", rt.SandboxURL()+"/health", nil, map[string]string{hdrSandboxID: private.SandboxID, hdrSandboxPort: "49983"}); r.status != http.StatusNoContent {
		t.Errorf("private sandbox's envd health without a traffic token: %d %s", r.status, r.body)
	}
	// GET gives the token back (to the API key's holder), for a client
	// that lost it, and says whether the sandbox is public.
	for _, c := range []struct {
		sb     sandboxBody
		token  *string
		public bool
	}{{public, nil, true}, {private, &token, false}} {
		var d struct {
			TrafficAccessToken *string `json:"trafficAccessToken"`
			Network            struct {
				AllowPublicTraffic *bool `json:"allowPublicTraffic"`
			} `json:"network"`
		}
		api(t, rt, "GET", "/sandboxes/"+c.sb.SandboxID, nil).decode(t, &d)
		if (d.TrafficAccessToken == nil) != (c.token == nil) || c.token != nil && *d.TrafficAccessToken != *c.token {
			t.Errorf("GET %s: trafficAccessToken %v, want %v", c.sb.SandboxID, d.TrafficAccessToken, c.token)
		}
		if d.Network.AllowPublicTraffic == nil || *d.Network.AllowPublicTraffic != c.public {
			t.Errorf("GET %s: network.allowPublicTraffic %v, want %v", c.sb.SandboxID, d.Network.AllowPublicTraffic, c.public)
		}
	}
}
