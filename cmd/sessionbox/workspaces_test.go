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

// TestCheckpointAndRemove: `checkpoint` posts to the session's checkpoint
// route and prints what was saved; `rm` deletes each named session in turn
// and stops at the first the service refuses, naming it.
func TestCheckpointAndRemove(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/sessions/demo/checkpoint":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"at":"2026-01-02T03:04:05Z","files":3,"bytes":1234}`)
		case r.Method == "DELETE" && r.URL.Path == "/v1/sessions/gone":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"https://sessionbox.dev/problems/not-found","title":"Not Found","status":404,"detail":"no session \"gone\""}`)
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	env := map[string]string{"SESSIONBOX_URL": srv.URL, "SESSIONBOX_API_KEY": "sbx_test_0123456789"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	stdout, _ := captureOutput(t, func() {
		if err := runCheckpoint(ctx, []string{"--session", "demo"}, getenv); err != nil {
			t.Errorf("checkpoint: %v", err)
		}
	})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if want := "checkpoint of demo at " + when(at) + ": 3 files, 1.2 KiB\n"; stdout != want {
		t.Fatalf("checkpoint printed %q, want %q", stdout, want)
	}
	stdout, _ = captureOutput(t, func() {
		err := runRemove(ctx, []string{"a", "gone", "b"}, getenv)
		if err == nil || !strings.Contains(err.Error(), "delete session gone") || !strings.Contains(err.Error(), "404") {
			t.Errorf("rm: %v, want the refusal of gone", err)
		}
	})
	if stdout != "deleted a\n" {
		t.Fatalf("rm printed %q", stdout)
	}
	mu.Lock()
	got := strings.Join(calls, ",")
	mu.Unlock()
	if want := "POST /v1/sessions/demo/checkpoint,DELETE /v1/sessions/a,DELETE /v1/sessions/gone"; got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	_, _ = captureOutput(t, func() {
		if err := runRemove(ctx, nil, getenv); err == nil {
			t.Error("rm without a session succeeded")
		}
		if err := runCheckpoint(ctx, []string{"extra"}, getenv); err == nil {
			t.Error("checkpoint with an argument succeeded")
		}
	})
}
