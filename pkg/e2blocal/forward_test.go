//go:build linux

package e2blocal

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// proxyFixture is a runtime with two fake running sandboxes, one private
// (a traffic token), whose servers are one HTTP server on a unix socket,
// reachable through the proxy's port and through Transport's forward.
type proxyFixture struct {
	rt      *Runtime
	port    *http.Client // through the proxy on a TCP port
	portURL string
	direct  *http.Client // in process
}

func newProxyFixture(t *testing.T, spaceErr error) *proxyFixture {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	upstream := &http.Server{Handler: upstreamMux()}
	go func() { _ = upstream.Serve(ln) }()
	t.Cleanup(func() { _ = upstream.Close() })

	rt := &Runtime{sandboxes: map[string]*sandbox{}, signed: newSignedRouter(), log: slog.New(slog.DiscardHandler)}
	rt.cfg.SpaceCheck = func() error { return spaceErr }
	for id, token := range map[string]string{"pub": "", "priv": "tok"} {
		s := &sandbox{rt: rt, id: id, trafficToken: token, state: stateRunning, transport: newTransport(sock)}
		t.Cleanup(s.transport.CloseIdleConnections)
		rt.sandboxes[id] = s
	}
	srv := httptest.NewServer(rt.proxyHandler())
	t.Cleanup(srv.Close)
	forward := &inProcessTransport{
		hosts:  map[string]func(*http.Request) (*http.Response, error){"sandbox.test": rt.forward},
		next:   http.DefaultTransport,
		closed: func() bool { return false },
	}
	return &proxyFixture{rt: rt, port: srv.Client(), portURL: srv.URL, direct: &http.Client{Transport: forward}}
}

// upstreamMux stands in for envd and the interpreter: it tells what it
// was sent, answers a status, and cuts a response short.
func upstreamMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"id": r.Header.Get(hdrSandboxID), "port": r.Header.Get(hdrSandboxPort),
			"token": r.Header.Get(trafficTokenHeader), "host": r.Host, "uri": r.RequestURI,
			"method": r.Method, "body": string(body), "hop": r.Header.Get("X-Hop"),
			"xff": r.Header.Get("X-Forwarded-For") + r.Header.Get("Forwarded"), "ua": r.UserAgent(),
		})
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Kind", "tea")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only part")
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		_ = conn.Close()
	})
	return mux
}

type answer struct {
	status  int
	body    string
	kind    string // X-Kind
	readErr error
}

func (f *proxyFixture) do(t *testing.T, c *http.Client, base, method, path string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, readErr := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, body: string(b), kind: resp.Header.Get("X-Kind"), readErr: readErr}
	if base != "http://sandbox.test" {
		// The port's answer names its loopback address; the in-process
		// one the address local mode gives.
		a.body = strings.ReplaceAll(a.body, strings.TrimPrefix(base, "http://"), "sandbox.test")
	}
	return a
}

// Every request local mode's E2B client may send gets the same answer in
// process as through the proxy's port: routed by header or path, refused
// for an unknown sandbox, a missing traffic token or a full disk, with the
// routing headers set and the traffic token and hop-by-hop headers kept
// from the sandbox, statuses and headers passed back, and a response cut
// short failing with io.ErrUnexpectedEOF.
func TestForwardMatchesProxy(t *testing.T) {
	t.Parallel()
	type req struct {
		name, method, path string
		headers            map[string]string
		body               string
	}
	byHeader := func(id, port string) map[string]string {
		return map[string]string{hdrSandboxID: id, hdrSandboxPort: port}
	}
	cases := []req{
		{"envd by header", "POST", "/echo?x=1", byHeader("pub", envdPort), "hello"},
		{"interpreter by header", "GET", "/echo", byHeader("pub", "49999"), ""},
		{"by path", "GET", "/_sandboxes/pub/49999/echo?a=%2F", nil, ""},
		{"unknown sandbox", "GET", "/echo", byHeader("nope", envdPort), ""},
		{"private without token", "GET", "/echo", byHeader("priv", "49999"), ""},
		{"private with token", "GET", "/echo", map[string]string{hdrSandboxID: "priv", hdrSandboxPort: "49999", trafficTokenHeader: "tok"}, ""},
		{"private envd needs no token", "GET", "/echo", byHeader("priv", envdPort), ""},
		{"hop-by-hop headers", "GET", "/echo", map[string]string{hdrSandboxID: "pub", hdrSandboxPort: envdPort, "Connection": "X-Hop", "X-Hop": "1"}, ""},
		{"forwarding headers and user agent", "GET", "/echo", map[string]string{hdrSandboxID: "pub", hdrSandboxPort: envdPort,
			"X-Forwarded-For": "10.0.0.1", "Forwarded": "for=10.0.0.1", "User-Agent": "e2b-go-sdk/test"}, ""},
		{"status and headers back", "GET", "/teapot", byHeader("pub", envdPort), ""},
		{"cut short", "GET", "/cut", byHeader("pub", envdPort), ""},
	}
	f := newProxyFixture(t, nil)
	for _, tc := range cases {
		viaPort := f.do(t, f.port, f.portURL, tc.method, tc.path, tc.headers, tc.body)
		direct := f.do(t, f.direct, "http://sandbox.test", tc.method, tc.path, tc.headers, tc.body)
		if viaPort.status != direct.status || viaPort.body != direct.body || viaPort.kind != direct.kind {
			t.Errorf("%s: through the port %d %q %q, in process %d %q %q", tc.name,
				viaPort.status, viaPort.body, viaPort.kind, direct.status, direct.body, direct.kind)
		}
		if errors.Is(viaPort.readErr, io.ErrUnexpectedEOF) != errors.Is(direct.readErr, io.ErrUnexpectedEOF) ||
			(viaPort.readErr == nil) != (direct.readErr == nil) {
			t.Errorf("%s: reading through the port: %v, in process: %v", tc.name, viaPort.readErr, direct.readErr)
		}
	}

	full := newProxyFixture(t, errors.New("the disk is full"))
	viaPort := full.do(t, full.port, full.portURL, "POST", "/files?path=a", byHeader("pub", envdPort), "data")
	direct := full.do(t, full.direct, "http://sandbox.test", "POST", "/files?path=a", byHeader("pub", envdPort), "data")
	if viaPort.status != http.StatusInsufficientStorage || viaPort != direct {
		t.Errorf("upload on a full disk: through the port %+v, in process %+v", viaPort, direct)
	}
}
