package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestContextsCommands: each contexts command reaches its route and prints
// what came back; a refusal names the context and keeps the problem.
func TestContextsCommands(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/sessions/demo/contexts":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"contextId":"c1","language":"bash","cwd":"/tmp","createdAt":"2026-01-02T03:04:05Z"}`)
		case r.Method == "GET" && r.URL.Path == "/v1/sessions/demo/contexts":
			_, _ = io.WriteString(w, `{"contexts":[{"contextId":"c1","language":"bash","cwd":"/tmp","createdAt":"2026-01-02T03:04:05Z"}]}`)
		case r.URL.Path == "/v1/sessions/demo/contexts/old/reset":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusGone)
			_, _ = io.WriteString(w, `{"type":"https://sessionbox.dev/problems/gone","title":"Gone","status":410,"detail":"context \"old\" is gone"}`)
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/reset"), r.Method == "DELETE":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	env := map[string]string{"SESSIONBOX_URL": srv.URL, "SESSIONBOX_API_KEY": "sbx_test_0123456789"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	cases := []struct {
		args    []string
		stdout  string
		err     string
		request string
	}{
		{[]string{"--session", "demo", "create", "--language", "bash", "--cwd", "/tmp"}, "c1\n", "",
			`POST /v1/sessions/demo/contexts {"language":"bash","cwd":"/tmp"}`},
		{[]string{"--session", "demo", "ls"}, "CONTEXT  LANGUAGE  CWD   CREATED\nc1       bash      /tmp  " + when(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) + "\n", "",
			"GET /v1/sessions/demo/contexts "},
		{[]string{"--session", "demo", "reset", "c1"}, "reset c1\n", "", "POST /v1/sessions/demo/contexts/c1/reset "},
		{[]string{"--session", "demo", "rm", "c1"}, "deleted c1\n", "", "DELETE /v1/sessions/demo/contexts/c1 "},
		{[]string{"--session", "demo", "reset", "old"}, "", `contexts reset old: 410 Gone: context "old" is gone`, "POST /v1/sessions/demo/contexts/old/reset "},
		{[]string{"--session", "demo", "frob"}, "", `unknown subcommand "frob"`, ""},
		{[]string{"--session", "demo", "rm"}, "", "name at least one context", ""},
	}
	for _, tc := range cases {
		mu.Lock()
		calls = nil
		mu.Unlock()
		var err error
		stdout, _ := captureOutput(t, func() { err = runContexts(ctx, tc.args, getenv) })
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Fatalf("%v: err %v, want %q", tc.args, err, tc.err)
		}
		if stdout != tc.stdout {
			t.Fatalf("%v printed %q, want %q", tc.args, stdout, tc.stdout)
		}
		mu.Lock()
		got := strings.Join(calls, ",")
		mu.Unlock()
		if got != tc.request {
			t.Fatalf("%v sent %q, want %q", tc.args, got, tc.request)
		}
	}
}
