package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestFilesFetch: `files fetch` sends the URLs and the destination, prints
// what landed, names each URL that did not, and fails unless all landed.
func TestFilesFetch(t *testing.T) {
	var got struct {
		URLs    []string `json:"urls"`
		DestDir string   `json:"destDir"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/sessions/demo/files/upload-urls" || json.NewDecoder(r.Body).Decode(&got) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"partial_success","uploaded":[{"sourceUrl":"https://cdn.example.com/a","path":"/home/user/data/a.csv","sizeBytes":12}],`+
			`"errors":[{"sourceUrl":"http://169.254.169.254/","error":"refused: cloud metadata"}],"restarted":false}`)
	}))
	defer srv.Close()
	env := map[string]string{"SESSIONBOX_URL": srv.URL, "SESSIONBOX_API_KEY": "sbx_test_0123456789"}
	getenv := func(k string) string { return env[k] }
	stdout, stderr := captureOutput(t, func() {
		err := runFiles(context.Background(), []string{"fetch", "--dest", "data", "https://cdn.example.com/a", "--session", "demo", "http://169.254.169.254/"}, getenv)
		if err == nil || err.Error() != "1 of 2 URLs failed" {
			t.Errorf("err = %v, want 1 of 2 URLs failed", err)
		}
	})
	if got.DestDir != "data" || len(got.URLs) != 2 {
		t.Fatalf("request %+v", got)
	}
	if !strings.Contains(stdout, "/home/user/data/a.csv (12 bytes) from https://cdn.example.com/a") ||
		!strings.Contains(stderr, "http://169.254.169.254/: refused: cloud metadata") {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	var misuse *errUsage
	if err := runFiles(context.Background(), []string{"fetch"}, getenv); !errors.As(err, &misuse) {
		t.Fatalf("no URLs: %v, want a usage error", err)
	}
}

// captureOutput runs f with stdout and stderr going to pipes.
func captureOutput(t *testing.T, f func()) (stdout, stderr string) {
	t.Helper()
	read := func(p **os.File) (func() string, func()) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		old := *p
		*p = w
		done := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			done <- string(b)
		}()
		return func() string { _ = w.Close(); return <-done }, func() { *p = old }
	}
	outText, outRestore := read(&os.Stdout)
	errText, errRestore := read(&os.Stderr)
	f()
	outRestore()
	errRestore()
	return outText(), errText()
}
