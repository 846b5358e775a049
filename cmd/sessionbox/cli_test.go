package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// apiFake is an API that answers the routes a test gives it ("METHOD
// /path") and records every request; any other route is a 404 problem.
type apiFake struct {
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	got    []seen
	srv    *httptest.Server
}

// seen is one request the fake received.
type seen struct {
	method, path, query string
	body                string
	header              http.Header
}

func newAPIFake(t *testing.T, routes map[string]http.HandlerFunc) *apiFake {
	t.Helper()
	f := &apiFake{routes: routes}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.got = append(f.got, seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()})
		h := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if h == nil {
			problem(w, http.StatusNotFound, "not-found", "no route "+r.Method+" "+r.URL.Path)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// requests are the requests so far, as "METHOD /path?query".
func (f *apiFake) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.got {
		line := s.method + " " + s.path
		if s.query != "" {
			line += "?" + s.query
		}
		out = append(out, line)
	}
	return out
}

// last is the last request received.
func (f *apiFake) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		t.Fatal("the API got no request")
	}
	return f.got[len(f.got)-1]
}

// reply answers with a JSON body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func problem(w http.ResponseWriter, status int, kind, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "https://sessionbox.dev/problems/" + kind,
		"title": http.StatusText(status), "status": status, "detail": detail})
}

// cli runs the command line in this process against the API at url, as
// main would, and returns its exit code and output. Tests that call it
// must not be parallel: it swaps the process's stdout and stderr.
func cli(t *testing.T, url string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("SESSIONBOX_URL", url)
	t.Setenv("SESSIONBOX_API_KEY", "sbx_cli_test_0123456789")
	stdout, stderr = captureOutput(t, func() { code = run(context.Background(), args) })
	return code, stdout, stderr
}

// TestHelp: every command and subcommand answers --help, -h and `help CMD`
// on stdout with exit 0, listing its subcommands, its flags and, for
// clients of the API, the variables that name it.
func TestHelp(t *testing.T) {
	clientCmds := map[string]bool{}
	for _, c := range clientCommands() {
		clientCmds[c.name] = true
	}
	type helpCase struct {
		args []string
		want []string
	}
	cases := []helpCase{
		{[]string{"--help"}, []string{"usage: sessionbox", "exec", "files", "runs", "status", "SESSIONBOX_URL", "SESSIONBOX_API_KEY"}},
		{[]string{"-h"}, []string{"usage: sessionbox", "serve"}},
		{[]string{"help"}, []string{"usage: sessionbox", "install", "reset", "stop", "rm", "Exit codes: 0 done, 1 failed"}},
		{[]string{"help", "files"}, []string{"usage: sessionbox files", "put LOCAL", "get REMOTE", "ls [DIR]", "rm PATH", "fetch URL", "--session ID", "SESSIONBOX_URL"}},
		{[]string{"files", "--help"}, []string{"subcommands:", "put LOCAL", "get REMOTE", "--json", "--dest DIR", "SESSIONBOX_API_KEY"}},
		{[]string{"files", "put", "--help"}, []string{"usage: sessionbox files"}},
		{[]string{"runs", "-h"}, []string{"submit CODE", "get RUN_ID", "--wait", "--idempotency-key KEY"}},
		{[]string{"exec", "1+1", "--help"}, []string{"--save-images DIR", "--timeout SECS", "--once"}},
		{[]string{"keys", "--help"}, []string{"create", "list", "revoke"}},
		{[]string{"serve", "--help"}, []string{"--addr", "SESSIONBOX_ADDR"}},
	}
	for _, c := range commands() {
		want := []string{"usage: sessionbox " + c.name}
		if clientCmds[c.name] {
			want = append(want, "--json", "SESSIONBOX_URL", "SESSIONBOX_API_KEY")
		}
		cases = append(cases, helpCase{[]string{c.name, "--help"}, want}, helpCase{[]string{"help", c.name}, want})
	}
	for _, tc := range cases {
		// No API at all: help must not need one.
		code, stdout, stderr := cli(t, "http://127.0.0.1:1", tc.args...)
		if code != 0 {
			t.Errorf("%q: exit %d, want 0; stderr %q", tc.args, code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: help lacks %q:\n%s", tc.args, w, stdout)
			}
		}
	}
}

// TestMisuse: a command used wrongly exits 2, says what was wrong and
// points at its help; no request is sent.
func TestMisuse(t *testing.T) {
	api := newAPIFake(t, nil)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "usage: sessionbox"},
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"files"}, "name a subcommand"},
		{[]string{"files", "chmod", "x"}, `unknown subcommand "chmod"`},
		{[]string{"files", "put"}, "wrong number of arguments to put"},
		{[]string{"exec"}, "no code given"},
		{[]string{"exec", "--nosuch", "1"}, "flag provided but not defined: -nosuch"},
		{[]string{"exec", "--timeout", "soon", "1"}, `invalid value "soon" for flag -timeout`},
		{[]string{"exec", "--once", "--session", "s", "1"}, "--session and --once do not go together"},
		{[]string{"exec", "--template", "base", "1"}, "--template goes with --once"},
		{[]string{"runs", "get"}, "get takes one run id"},
		{[]string{"runs", "cancel", "r1"}, `unknown subcommand "cancel"`},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"install"}, "name at least one package"},
		{[]string{"rm"}, "name at least one session"},
		{[]string{"start", "--env", "novalue"}, `"novalue" is not K=V`},
	}
	for _, tc := range cases {
		code, _, stderr := cli(t, api.srv.URL, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
		if len(tc.args) > 0 && tc.args[0] != "nosuch" && !strings.Contains(stderr, "--help") {
			t.Errorf("%q: stderr %q does not point at --help", tc.args, stderr)
		}
	}
	if got := api.requests(); len(got) != 0 {
		t.Fatalf("misused commands sent %q", got)
	}
}

// TestFlagsAfterArguments: flags may follow or sit between arguments and
// mean the same as before them; "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	done := `{"type":"done","summary":{"success":true,"durationMs":1,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n"
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/x/execute/stream": reply(200, done),
		"GET /v1/sessions/x/files":           reply(200, `{"entries":[]}`),
		"DELETE /v1/sessions/a":              reply(204, ""),
		"DELETE /v1/sessions/b":              reply(204, ""),
		"POST /v1/sessions/x/install/stream": reply(200, `{"type":"stdout","text":"Collecting pandas\n"}`+"\n"+
			`{"type":"done","summary":{"success":true,"exitCode":0,"durationMs":5,"truncated":false,"restarted":false}}`+"\n"),
		"POST /v1/sessions/default/execute/stream": reply(200, done),
	})
	cases := []struct {
		args     []string
		request  string
		bodyHas  string
		stdoutJS bool
	}{
		{[]string{"exec", "1+1", "--session", "x"}, "POST /v1/sessions/x/execute/stream", `"code":"1+1"`, false},
		{[]string{"exec", "print(1)", "--session=x", "--timeout", "9"}, "POST /v1/sessions/x/execute/stream", `"timeoutSecs":9`, false},
		{[]string{"exec", "a", "--session", "x", "b"}, "POST /v1/sessions/x/execute/stream", `"code":"a b"`, false},
		{[]string{"exec", "--", "-1 + 3", "--session", "x"}, "POST /v1/sessions/default/execute/stream", `"code":"-1 + 3 --session x"`, false},
		{[]string{"files", "ls", "data", "--session", "x", "--json"}, "GET /v1/sessions/x/files?depth=1&path=data", "", true},
		{[]string{"install", "pandas", "--session", "x", "numpy>=2"}, "POST /v1/sessions/x/install/stream", `"packages":["pandas","numpy\u003e=2"]`, false},
		{[]string{"rm", "a", "--json", "b"}, "DELETE /v1/sessions/b", "", true},
	}
	for _, tc := range cases {
		code, stdout, stderr := cli(t, api.srv.URL, tc.args...)
		if code != 0 {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, stderr)
			continue
		}
		got := api.last(t)
		line := got.method + " " + got.path
		if got.query != "" {
			line += "?" + got.query
		}
		if line != tc.request || !strings.Contains(got.body, tc.bodyHas) {
			t.Errorf("%q: sent %s %s, want %s with %s", tc.args, line, got.body, tc.request, tc.bodyHas)
		}
		if tc.stdoutJS && !json.Valid([]byte(stdout)) {
			t.Errorf("%q: --json printed %q", tc.args, stdout)
		}
	}
}

// TestUnreachable: with nothing listening at SESSIONBOX_URL, a client
// command says which URL it tried, why it failed and what to do.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	_ = ln.Close()
	for _, args := range [][]string{{"sessions"}, {"exec", "1"}, {"files", "get", "a.txt", "-"}, {"status", "--json"}} {
		code, _, stderr := cli(t, url, args...)
		want := "cannot reach sessionbox at " + url + ": connection refused — is `sessionbox serve` running? set SESSIONBOX_URL"
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d stderr %q, want 1 and %q", args, code, stderr, want)
		}
	}
	code, _, stderr := cli(t, "http://no-such-host.invalid:8080", "sessions")
	// The resolver says the name does not exist, or cannot be asked at all.
	if code != 1 || !strings.Contains(stderr, "cannot reach sessionbox at http://no-such-host.invalid:8080: ") ||
		!strings.Contains(stderr, "no-such-host.invalid") || !strings.Contains(stderr, "set SESSIONBOX_URL") {
		t.Errorf("unknown host: exit %d stderr %q", code, stderr)
	}
}

// TestFilesGetLeavesNoFile: a download that fails, before or during the
// transfer, leaves no file behind and does not touch a file already there;
// one that succeeds replaces it whole.
func TestFilesGetLeavesNoFile(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"GET /v1/sessions/default/files/content": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("path") {
			case "ok.txt":
				_, _ = io.WriteString(w, "new contents\n")
			case "cut.txt":
				// The answer promises more than it sends: the connection
				// ends midway.
				w.Header().Set("Content-Length", "1000")
				_, _ = io.WriteString(w, "only part")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			default:
				problem(w, http.StatusNotFound, "not-found", `file "`+r.URL.Query().Get("path")+`" not found`)
			}
		},
	})
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.txt")
	if err := os.WriteFile(existing, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		remote, local string
		code          int
		stderr        string
		want          string // the local file afterwards; "" for none
	}{
		{"missing.txt", filepath.Join(dir, "missing.txt"), 1, `404 Not Found: file "missing.txt" not found`, ""},
		{"cut.txt", filepath.Join(dir, "cut.txt"), 1, "unexpected EOF", ""},
		{"missing.txt", existing, 1, "404", "old"},
		{"cut.txt", existing, 1, "unexpected EOF", "old"},
		{"ok.txt", existing, 0, "(13 bytes)", "new contents\n"},
		{"ok.txt", dir, 0, filepath.Join(dir, "ok.txt"), "new contents\n"},
	}
	for _, tc := range cases {
		code, _, stderr := cli(t, api.srv.URL, "files", "get", tc.remote, tc.local)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("get %s %s: exit %d stderr %q, want %d and %q", tc.remote, tc.local, code, stderr, tc.code, tc.stderr)
		}
		local := tc.local
		if local == dir {
			local = filepath.Join(dir, tc.remote)
		}
		b, err := os.ReadFile(local)
		switch {
		case tc.want == "" && !os.IsNotExist(err):
			t.Errorf("get %s: %s exists after a failure (%v)", tc.remote, local, err)
		case tc.want != "" && string(b) != tc.want:
			t.Errorf("get %s: %s holds %q, want %q", tc.remote, local, b, tc.want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Errorf("a temporary file was left behind: %s", e.Name())
		}
	}
}

// TestFilesGetInterrupted: a download cancelled midway (Ctrl-C cancels the
// command's context) leaves no file, not even its temporary one.
func TestFilesGetInterrupted(t *testing.T) {
	sent := make(chan struct{})
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"GET /v1/sessions/default/files/content": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "10000000")
			_, _ = w.Write(make([]byte, 1<<20))
			w.(http.Flusher).Flush()
			close(sent)
			<-r.Context().Done()
		},
	})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-sent
		cancel()
	}()
	env := map[string]string{"SESSIONBOX_URL": api.srv.URL, "SESSIONBOX_API_KEY": "sbx_cli_test_0123456789"}
	var err error
	_, _ = captureOutput(t, func() {
		err = runFiles(ctx, []string{"get", "big.bin", filepath.Join(dir, "big.bin")}, func(k string) string { return env[k] })
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an interrupted get left %v", entries)
	}
}
