package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildWithoutRuntime builds this command with pkg/e2blocal's stub for
// other platforms in place of the Linux runtime, as a darwin or windows
// build has it: on Linux an overlay drops the Linux-only files and lifts the
// stub's build constraint.
func buildWithoutRuntime(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pkgDir, err := filepath.Abs("../../pkg/e2blocal")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.HasPrefix(b, []byte("//go:build linux\n")):
			replace[f] = "" // deleted
		case bytes.HasPrefix(b, []byte("//go:build !linux\n")):
			stub := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(stub, bytes.TrimPrefix(b, []byte("//go:build !linux\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			replace[f] = stub
		}
	}
	if len(replace) < 2 {
		t.Fatalf("found %d platform files in %s; the boundary moved", len(replace), pkgDir)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sessionbox")
	cmd := exec.Command("go", "build", "-overlay", overlayPath, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build without the runtime: %v\n%s", err, out)
	}
	return bin
}

// fakeAPI answers the few routes the client commands use, as the API does,
// and records what it was sent.
type fakeAPI struct {
	mu    sync.Mutex
	files map[string][]byte
	code  []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer sbx_clienttest0123456789" {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"about:blank","title":"Unauthorized","status":401}`)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	entry := func(p string) map[string]any {
		return map[string]any{"name": filepath.Base(p), "path": p, "type": "file", "size": len(f.files[p]), "modifiedAt": time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/demo/execute/stream":
		var req struct{ Code string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.code = append(f.code, req.Code)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"type":"stdout","text":"hello\n"}`+"\n"+
			`{"type":"result","result":{"text":"42","isMainResult":true}}`+"\n"+
			`{"type":"done","summary":{"success":true,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}`+"\n")
	case r.Method == http.MethodPost && r.URL.Path == "/v1/execute/stream":
		var req struct{ Code, Template string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.code = append(f.code, "once["+req.Template+"]: "+req.Code)
		w.Header().Set("Content-Type", "application/x-ndjson")
		if req.Code == "slow()" {
			_, _ = io.WriteString(w, `{"type":"stdout","text":"before\n"}`+"\n"+
				`{"type":"error","error":{"name":"TimeoutError","value":"execution exceeded its timeout of 1 s","traceback":""}}`+"\n"+
				`{"type":"done","summary":{"success":false,"timedOut":true,"durationMs":1000,"truncated":false,"restarted":false,"kernelRestarted":false}}`+"\n")
			return
		}
		_, _ = io.WriteString(w, `{"type":"result","result":{"text":"7","isMainResult":true}}`+"\n"+
			`{"type":"done","summary":{"success":true,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}`+"\n")
	case r.Method == http.MethodPut && r.URL.Path == "/v1/sessions/demo/files/content":
		b, _ := io.ReadAll(r.Body)
		p := r.URL.Query().Get("path")
		f.files[p] = b
		_ = json.NewEncoder(w).Encode(entry(p))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/demo/files/content":
		_, _ = w.Write(f.files[r.URL.Query().Get("path")])
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/demo/files":
		var entries []map[string]any
		for p := range f.files {
			if strings.HasPrefix(p, r.URL.Query().Get("path")+"/") {
				entries = append(entries, entry(p))
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"entries": entries})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/sessions":
		_ = json.NewEncoder(w).Encode(map[string]any{"sessions": []map[string]any{{"sessionId": "demo", "state": "running", "sandboxId": "sbx1"}}})
	default:
		http.NotFound(w, r)
	}
}

// TestCommandsWithoutRuntime: a build without the local runtime (what
// darwin and windows get) runs the client commands against a server, and
// serve and runtime fail saying they need Linux.
func TestCommandsWithoutRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	t.Parallel()
	bin := buildWithoutRuntime(t)
	api := &fakeAPI{files: map[string][]byte{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	local := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(local, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SESSIONBOX_URL="+srv.URL, "SESSIONBOX_API_KEY=sbx_clienttest0123456789", "TZ=UTC")
	cases := []struct {
		name    string
		args    []string
		wantErr bool
		stdout  string // substring of stdout
		stderr  string // substring of stderr
	}{
		{"exec", []string{"exec", "--session", "demo", "6 * 7"}, false, "hello\n42\n", ""},
		{"exec once", []string{"exec", "--once", "--template", "base", "7"}, false, "7\n", ""},
		{"exec once past its timeout", []string{"exec", "--once", "--timeout", "1", "slow()"}, true, "before\n", "ran past its timeout"},
		{"files put", []string{"files", "--session", "demo", "put", local, "data/in.csv"}, false, "data/in.csv (8 bytes)", ""},
		{"files get", []string{"files", "--session", "demo", "get", "data/in.csv", "-"}, false, "a,b\n1,2\n", ""},
		{"files ls", []string{"files", "--session", "demo", "ls", "data"}, false, "file  8 bytes  2026-11-23 09:00  data/in.csv\n", ""},
		{"sessions", []string{"sessions"}, false, "demo     running  sbx1  ", ""},
		{"runtime", []string{"runtime", "--data-dir", t.TempDir()}, true, "", "sessionbox runtime: e2blocal: the local sandbox runtime needs Linux"},
		{"serve", []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0"}, true, "", "needs Linux"},
	}
	// In order: get and ls read what put wrote.
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, c.args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
		err := cmd.Run()
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: err %v, want error %v\nstdout: %s\nstderr: %s", c.name, err, c.wantErr, &stdout, &stderr)
		}
		if !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Fatalf("%s: stdout %q (want %q), stderr %q (want %q)", c.name, &stdout, c.stdout, &stderr, c.stderr)
		}
	}
	if want := []string{"6 * 7", "once[base]: 7", "once[]: slow()"}; !slices.Equal(api.code, want) {
		t.Fatalf("the server got code %q, want %q", api.code, want)
	}
}
