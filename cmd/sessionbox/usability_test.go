package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestFlagPlaceholders: every flag in every command's help reads as
// --name or --name WORD, the word in capitals, never a Go type name or a
// phrase the usage happened to quote.
func TestFlagPlaceholders(t *testing.T) {
	line := regexp.MustCompile(`^  (--\S+(?: \S+)*?)\s{2,}\S`)
	good := regexp.MustCompile(`^--[a-z0-9-]+( [A-Z][A-Z0-9_=]*)?$`)
	for _, c := range commands() {
		_, stdout, _ := cli(t, "http://127.0.0.1:1", c.name, "--help")
		flags := 0
		for _, l := range strings.Split(stdout, "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			flags++
			if !good.MatchString(m[1]) {
				t.Errorf("%s --help: flag shown as %q", c.name, m[1])
			}
		}
		if flags == 0 {
			t.Errorf("%s --help lists no flags:\n%s", c.name, stdout)
		}
	}
}

func TestPlaceholder(t *testing.T) {
	cases := []struct{ name, arg, usage, want string }{
		{"agent", "PATH", "", "PATH"},
		{"addr", "string", "listen address", "ADDR"},
		{"lifetime-secs", "value", "seconds (default 3600)", "SECS"},
		{"max-live-sandboxes-per-principal", "value", "(default half the tenant's cap)", "N"},
		{"reap-batch", "value", "due sessions (default 100)", "N"},
		{"template", "value", "template (default code-interpreter-v1)", "TEMPLATE"},
		{"warm-pool", "int", "trees", "N"},
		{"reap-interval", "duration", "how often", "DURATION"},
		{"json", "", "", ""},
	}
	for _, c := range cases {
		if got := placeholder(c.name, c.arg, c.usage); got != c.want {
			t.Errorf("placeholder(%q, %q) = %q, want %q", c.name, c.arg, got, c.want)
		}
	}
}

// TestDidYouMean: an unknown command or subcommand names the closest one
// there is, and nothing when none is close.
func TestDidYouMean(t *testing.T) {
	api := newAPIFake(t, nil)
	cases := []struct {
		args []string
		want string
		not  string
	}{
		{[]string{"exce", "1"}, "did you mean exec?", ""},
		{[]string{"stauts"}, "did you mean status?", ""},
		{[]string{"sess"}, "did you mean sessions?", ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "did you mean"},
		{[]string{"files", "lss"}, "did you mean ls?", ""},
		{[]string{"files", "remove", "x"}, `unknown subcommand "remove"`, "did you mean"},
		{[]string{"cmd", "atach", "c1"}, "did you mean attach?", ""},
		{[]string{"runs", "sumbit", "1"}, "did you mean submit?", ""},
		{[]string{"contexts", "creat"}, "did you mean create?", ""},
	}
	for _, tc := range cases {
		code, _, stderr := cli(t, api.srv.URL, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || (tc.not != "" && strings.Contains(stderr, tc.not)) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if got := api.requests(); len(got) != 0 {
		t.Fatalf("misspelt commands sent %q", got)
	}
}

// TestVersion: --version and version print the build on stdout and exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		code, stdout, stderr := cli(t, "http://127.0.0.1:1", arg)
		if code != 0 || !regexp.MustCompile(`^sessionbox \S+ .*go1\.\d+.* \w+/\w+\n$`).MatchString(stdout) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, stdout, stderr)
		}
	}
}

// TestCmdRunExitCode: cmd run exits with the remote command's own code, 124
// for a timeout, and 1 for a code no process can exit with.
func TestCmdRunExitCode(t *testing.T) {
	var summary string
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/default/commands": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, `{"type":"start"}`+"\n"+`{"type":"done","summary":`+summary+"}\n")
		},
	})
	cases := []struct {
		summary string
		code    int
		says    string
	}{
		{`{"exitCode":0,"durationMs":1,"truncated":false,"timedOut":false,"restarted":false}`, 0, ""},
		{`{"exitCode":42,"durationMs":1,"truncated":false,"timedOut":false,"restarted":false}`, 42, "the command exited 42"},
		{`{"exitCode":2,"durationMs":1,"truncated":false,"timedOut":false,"restarted":false}`, 2, "the command exited 2"},
		{`{"exitCode":-1,"durationMs":1,"truncated":false,"timedOut":true,"restarted":false}`, 124, "past its timeout"},
		{`{"exitCode":300,"durationMs":1,"truncated":false,"timedOut":false,"restarted":false}`, 1, "the command exited 300"},
	}
	for _, tc := range cases {
		summary = tc.summary
		code, _, stderr := cli(t, api.srv.URL, "cmd", "run", "--", "false")
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("summary %s: exit %d, stderr %q; want %d and %q", tc.summary, code, stderr, tc.code, tc.says)
		}
	}
}

// TestExecFile: one argument naming a local file runs the file's code;
// anything else is the code itself.
func TestExecFile(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{"POST /v1/sessions/default/execute/stream": reply(200, doneJSON)})
	dir := t.TempDir()
	script := filepath.Join(dir, "script.py")
	if err := os.WriteFile(script, []byte("x = 40\nx + 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code string
	}{
		{[]string{"exec", script}, "x = 40\nx + 2\n"},
		{[]string{"exec", "--session", "default", script}, "x = 40\nx + 2\n"},
		{[]string{"exec", filepath.Join(dir, "nosuch.py")}, filepath.Join(dir, "nosuch.py")},
		{[]string{"exec", dir}, dir},
		{[]string{"exec", script, "+", "1"}, script + " + 1"},
	}
	for _, tc := range cases {
		code, _, stderr := cli(t, api.srv.URL, tc.args...)
		var sent struct{ Code string }
		if err := json.Unmarshal([]byte(api.last(t).body), &sent); err != nil || code != 0 || sent.Code != tc.code {
			t.Errorf("%q: exit %d (%s), sent code %q, want %q", tc.args, code, stderr, sent.Code, tc.code)
		}
	}
}

// TestFilesRmIsHonest: a path that is not there is said so and fails the
// command after the others are removed; --force ignores it.
func TestFilesRmIsHonest(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"GET /v1/sessions/default/files": func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("path") {
			case "/home/user":
				reply(200, `{"entries":[{"name":"a.txt","path":"/home/user/a.txt","type":"file","size":1,"modifiedAt":"2026-11-26T09:00:00Z"}]}`)(w, r)
			default:
				problem(w, http.StatusNotFound, "not-found", "no such directory")
			}
		},
		"DELETE /v1/sessions/default/files": reply(204, ""),
	})
	code, stdout, stderr := cli(t, api.srv.URL, "files", "rm", "a.txt", "b.txt", "/tmp/gone/c")
	if code != 1 || stdout != "removed a.txt\n" || !strings.Contains(stderr, "b.txt: no such file or directory") ||
		!strings.Contains(stderr, "/tmp/gone/c: no such file or directory") || !strings.Contains(stderr, "2 of 3 paths were not there") {
		t.Fatalf("rm: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, api.srv.URL, "files", "rm", "--json", "a.txt", "b.txt")
	var out struct{ Removed, Missing []string }
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 1 || strings.Join(out.Removed, ",") != "a.txt" || strings.Join(out.Missing, ",") != "b.txt" {
		t.Fatalf("rm --json: exit %d, %q", code, stdout)
	}
	before := len(api.requests())
	if code, _, stderr := cli(t, api.srv.URL, "files", "rm", "--force", "b.txt"); code != 0 {
		t.Fatalf("rm --force: exit %d, %q", code, stderr)
	}
	if got := api.requests()[before:]; len(got) != 1 || !strings.HasPrefix(got[0], "DELETE ") {
		t.Fatalf("rm --force sent %q, want the delete alone", got)
	}
}

// TestFilesPutDir: put of a directory uploads each regular file below it
// to the same relative path under the remote directory.
func TestFilesPutDir(t *testing.T) {
	var (
		put  []string
		body = map[string]string{}
	)
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"PUT /v1/sessions/default/files/content": func(w http.ResponseWriter, r *http.Request) {
			p := r.URL.Query().Get("path")
			b, _ := io.ReadAll(r.Body)
			put, body[p] = append(put, p), string(b)
			reply(200, `{"name":"x","path":"`+p+`","type":"file","size":`+itoa(len(b))+`,"modifiedAt":"2026-11-26T09:00:00Z"}`)(w, r)
		},
	})
	dir := filepath.Join(t.TempDir(), "proj")
	for name, text := range map[string]string{"main.py": "print(1)", "data/a.csv": "a,b\n", "data/deep/b.txt": "b"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, api.srv.URL, "files", "put", dir, "/home/user/p")
	sort.Strings(put)
	if code != 0 || strings.Join(put, " ") != "/home/user/p/data/a.csv /home/user/p/data/deep/b.txt /home/user/p/main.py" ||
		body["/home/user/p/data/a.csv"] != "a,b\n" || strings.Count(stdout, "\n") != 3 || !strings.Contains(stderr, "not a regular file") {
		t.Fatalf("put DIR: exit %d, put %q, stdout %q, stderr %q", code, put, stdout, stderr)
	}
	empty := t.TempDir()
	if code, _, stderr := cli(t, api.srv.URL, "files", "put", empty); code != 0 || !strings.Contains(stderr, "nothing was uploaded") {
		t.Fatalf("put of an empty dir: exit %d, %q", code, stderr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
