package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestClientEnvironment: the client commands take the API's URL and key
// from the environment they are given, and say which variable is missing.
func TestClientEnvironment(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sessions":[]}`))
	}))
	t.Cleanup(srv.Close)
	const key = "sbx_clientenv0123456789"
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"no key", map[string]string{"SESSIONBOX_URL": srv.URL}, "set SESSIONBOX_API_KEY"},
		{"url and key", map[string]string{"SESSIONBOX_URL": srv.URL, "SESSIONBOX_API_KEY": key}, ""},
	}
	for _, c := range cases {
		err := runSessions(context.Background(), nil, func(k string) string { return c.env[k] })
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: got %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 1 || auth[0] != "GET /v1/sessions Bearer "+key {
		t.Fatalf("requests %q, want one GET /v1/sessions with the key", auth)
	}
}
