package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMCPCommandRefuses: bad arguments, a missing or refused key and an API
// that does not answer stop `sessionbox mcp` before it speaks, with an
// error naming what is wrong.
func TestMCPCommandRefuses(t *testing.T) {
	t.Parallel()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"type":"https://sessionbox.dev/problems/unauthorized","title":"Unauthorized","status":401,"detail":"unknown API key"}`))
	}))
	t.Cleanup(refusing.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name string
		args []string
		key  string
		want string
	}{
		{"bad key", []string{"--url", refusing.URL}, "sbx_0123456789abcdef", "the API refused SESSIONBOX_API_KEY (401 Unauthorized: unknown API key)"},
		{"nothing listens", []string{"--url", closed.URL}, "sbx_0123456789abcdef", "cannot reach sessionbox"},
		{"bad session", []string{"--session", "a/b"}, "sbx_0123456789abcdef", "--session: session id must be"},
		{"stray argument", []string{"extra"}, "sbx_0123456789abcdef", `unexpected argument "extra"`},
		{"no key", nil, "", "SESSIONBOX_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"SESSIONBOX_API_KEY": tc.key}
			err := runMCP(context.Background(), tc.args, func(k string) string { return env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to name %q", err, tc.want)
			}
		})
	}
}
