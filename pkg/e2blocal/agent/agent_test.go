//go:build linux

package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunDispatchesByPort serves the agent on the host (envd and the
// kernel need no sandbox) and checks requests reach the server their
// E2b-Sandbox-Port names, and that readiness is reported before serving.
func TestRunDispatchesByPort(t *testing.T) {
	home := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	cfg := Config{User: "user", Home: home, Shell: "/bin/bash", Python: "/usr/bin/python3",
		Env: map[string]string{"GLOBAL": "1"}, AccessToken: "tok"}
	go func() {
		done <- Run(ctx, cfg, nil, ln, func() error { close(ready); return nil })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("agent stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("agent never became ready")
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", ln.Addr().String())
		},
	}}
	user := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "user server at "+r.Host)
	}))
	defer user.Close()
	userPort := strconv.Itoa(user.Listener.Addr().(*net.TCPAddr).Port)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := strconv.Itoa(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	cases := []struct {
		port, method, path, token string
		want                      int
		body                      string
	}{
		{userPort, "GET", "/x", "", http.StatusOK, "user server at agent"},
		{closedPort, "GET", "/", "", http.StatusBadGateway, `"port":` + closedPort},
		{"not-a-port", "GET", "/health", "", http.StatusNoContent, ""},
		{"49983", "GET", "/health", "", http.StatusNoContent, ""},
		{"", "GET", "/health", "", http.StatusNoContent, ""},
		{"49983", "GET", "/envs", "", http.StatusUnauthorized, ""},
		{"49999", "GET", "/health", "", http.StatusOK, ""},
		{"49999", "GET", "/contexts", "", http.StatusOK, "python"},
		{"49999", "POST", "/execute", "", http.StatusUnauthorized, "missing X-Access-Token"},
		{"49999", "POST", "/execute", "wrong", http.StatusUnauthorized, "invalid X-Access-Token"},
		{"49999", "POST", "/execute", "tok", http.StatusOK, `"42\n"`},
		{"49999", "GET", "/contexts", "wrong", http.StatusUnauthorized, "invalid X-Access-Token"},
	}
	for _, c := range cases {
		var reqBody io.Reader
		if c.method == "POST" {
			reqBody = strings.NewReader(`{"code":"print(6*7)"}`)
		}
		req, _ := http.NewRequest(c.method, "http://agent"+c.path, reqBody)
		if c.token != "" {
			req.Header.Set("X-Access-Token", c.token)
		}
		if c.port != "" {
			req.Header.Set("E2b-Sandbox-Port", c.port)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.port, c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || !strings.Contains(string(body), c.body) {
			t.Fatalf("port %q %s: %d %s, want %d containing %q", c.port, c.path, resp.StatusCode, body, c.want, c.body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestReadConfig: the two parts arrive one after the other on one pipe;
// the assignment's fields are the sandbox's.
func TestReadConfig(t *testing.T) {
	cr := NewConfigReader(strings.NewReader(`{"user":"user","home":"/home/user","standbyKernel":true,"rlimits":[{"resource":4,"cur":0,"max":0}]}
{"env":{"A":"b"},"accessToken":"tok","prewarmKernel":true}`))
	base, err := cr.Base()
	if err != nil || base.Home != "/home/user" || !base.StandbyKernel || len(base.Rlimits) != 1 || base.Env != nil {
		t.Fatalf("Base: %+v, %v", base, err)
	}
	a, err := cr.Assignment()
	if err != nil {
		t.Fatalf("Assignment: %v", err)
	}
	cfg := base.Assign(a)
	if cfg.Env["A"] != "b" || cfg.AccessToken != "tok" || !cfg.PrewarmKernel || cfg.Home != "/home/user" {
		t.Fatalf("assigned config: %+v", cfg)
	}
	for _, in := range []string{`{"user":`, `{"user":"user"}`, `{"user":"user"} {"env":`} {
		cr := NewConfigReader(strings.NewReader(in))
		_, err := cr.Base()
		if err == nil {
			_, err = cr.Assignment()
		}
		if err == nil {
			t.Fatalf("truncated config %q accepted", in)
		}
	}
}
