//go:build linux

package kernel

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAccessToken checks who may run code and manage contexts: without a
// configured token everything is open; with one, /execute needs the right
// X-Access-Token and /contexts* reject only a wrong one, since the official
// SDK calls them without the header.
func TestAccessToken(t *testing.T) {
	open := defaultEnv(t)
	secure := newTestEnv(t, Config{AccessToken: "s3cret"}, testTuning)
	cases := []struct {
		name     string
		env      *testEnv
		method   string
		path     string
		body     string
		token    *string
		want     int
		contains string
	}{
		{"open execute without token", open, "POST", "/execute", `{"code":"print(6*7)"}`, nil, 200, `"42\n"`},
		{"open execute with any token", open, "POST", "/execute", `{"code":"print(6*7)"}`, ptr("x"), 200, `"42\n"`},
		{"open contexts with any token", open, "GET", "/contexts", "", ptr("x"), 200, "python"},
		{"execute without token", secure, "POST", "/execute", `{"code":"print(1)"}`, nil, 401, "missing X-Access-Token"},
		{"execute with empty token", secure, "POST", "/execute", `{"code":"print(1)"}`, ptr(""), 401, "invalid X-Access-Token"},
		{"execute with wrong token", secure, "POST", "/execute", `{"code":"print(1)"}`, ptr("s3cre"), 401, "invalid X-Access-Token"},
		{"execute with right token", secure, "POST", "/execute", `{"code":"print(6*7)"}`, ptr("s3cret"), 200, `"42\n"`},
		{"list contexts without token", secure, "GET", "/contexts", "", nil, 200, "python"},
		{"list contexts with wrong token", secure, "GET", "/contexts", "", ptr("nope"), 401, "invalid X-Access-Token"},
		{"list contexts with right token", secure, "GET", "/contexts", "", ptr("s3cret"), 200, "python"},
		{"create context without token", secure, "POST", "/contexts", `{"language":"python"}`, nil, 200, `"id"`},
		{"create context with wrong token", secure, "POST", "/contexts", `{"language":"python"}`, ptr("nope"), 401, "invalid"},
		{"delete context with wrong token", secure, "DELETE", "/contexts/any", "", ptr("nope"), 401, "invalid"},
		{"restart context with wrong token", secure, "POST", "/contexts/any/restart", "", ptr("nope"), 401, "invalid"},
		{"delete unknown context without token", secure, "DELETE", "/contexts/any", "", nil, 404, "any"},
		{"health is open", secure, "GET", "/health", "", nil, 200, "OK"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ctype, body := doRequest(t, c.env, c.method, c.path, c.body, c.token)
			if status != c.want || !strings.Contains(body, c.contains) {
				t.Fatalf("%s %s: %d %q, want %d containing %q", c.method, c.path, status, body, c.want, c.contains)
			}
			if status == http.StatusUnauthorized && !strings.HasPrefix(ctype, "text/plain") {
				t.Fatalf("401 Content-Type %q, want text/plain", ctype)
			}
		})
	}
}

// TestAccessTokenRejectedExecuteRunsNothing makes sure a refused /execute
// never reaches a kernel: the side effect it asks for must not happen.
func TestAccessTokenRejectedExecuteRunsNothing(t *testing.T) {
	e := newTestEnv(t, Config{AccessToken: "s3cret"}, testTuning)
	code := `{"code":"x_from_intruder = 1"}`
	if status, _, body := doRequest(t, e, "POST", "/execute", code, ptr("wrong")); status != 401 {
		t.Fatalf("wrong token: %d %s", status, body)
	}
	check := `{"code":"print('x_from_intruder' in globals())"}`
	_, _, body := doRequest(t, e, "POST", "/execute", check, ptr("s3cret"))
	if !strings.Contains(body, `"False\n"`) {
		t.Fatalf("refused code ran: %s", body)
	}
}

func ptr(s string) *string { return &s }

func doRequest(t *testing.T, e *testEnv, method, path, body string, token *string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != nil {
		req.Header.Set(accessTokenHeader, *token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(data)
}
