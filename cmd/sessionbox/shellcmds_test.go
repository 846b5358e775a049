package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCmdRun: cmd run streams the command's output to stdout and stderr,
// sends cwd, envs and the timeout, and exits with the command's own code;
// cmd bg prints the id.
func TestCmdRun(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/s1/commands": func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			if body["background"] == true {
				reply(202, `{"commandId":"cmd-1","pid":7,"startedAt":"2026-11-26T09:00:00Z","restarted":false}`)(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, `{"type":"start"}`+"\n"+`{"type":"stdout","text":"out\n"}`+"\n"+`{"type":"stderr","text":"err\n"}`+"\n"+
				`{"type":"done","summary":{"exitCode":3,"durationMs":1,"truncated":false,"timedOut":false,"restarted":false}}`+"\n")
		},
	})
	code, stdout, stderr := cli(t, api.srv.URL, "cmd", "--session", "s1", "run", "--cwd", "data", "--env", "A=b", "--timeout", "9", "--", "ls", "-la")
	if code != 3 || stdout != "out\n" || !strings.Contains(stderr, "err\n") || !strings.Contains(stderr, "the command exited 3") {
		t.Fatalf("run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(api.got[0].body), &sent); err != nil || sent["cmd"] != "ls -la" || sent["cwd"] != "data" ||
		sent["timeoutSecs"] != float64(9) || sent["envs"].(map[string]any)["A"] != "b" || api.got[0].header.Get("Accept") != "application/x-ndjson" {
		t.Fatalf("sent %s %v", api.got[0].body, api.got[0].header)
	}
	code, stdout, stderr = cli(t, api.srv.URL, "cmd", "--session", "s1", "bg", "sleep", "9")
	if code != 0 || stdout != "cmd-1\n" {
		t.Fatalf("bg: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, api.srv.URL, "cmd", "attach"); code != 2 || !strings.Contains(stderr, "name one command id") {
		t.Fatalf("attach without an id: exit %d, %q", code, stderr)
	}
}

// outputRead is one answer of GET .../commands/cmd-1/output.
func outputRead(running bool, exit, stdout, stderr string, more bool) string {
	exitField := ""
	if exit != "" {
		exitField = `"exitCode":` + exit + `,`
	}
	b, _ := json.Marshal(stdout)
	e, _ := json.Marshal(stderr)
	return fmt.Sprintf(`{"commandId":"cmd-1","running":%t,%s"stdout":%s,"stderr":%s,"more":%t,`+
		`"stdoutPath":"/tmp/sessionbox-commands/cmd-1/stdout","stderrPath":"/tmp/sessionbox-commands/cmd-1/stderr",`+
		`"stdoutBytes":9,"stderrBytes":4}`, running, exitField, b, e, more)
}

// TestCmdOutput: cmd output prints one read's output to stdout and
// stderr, sends --wait as waitSecs, exits 0 while the command runs or
// output waits and with the command's code once all is read; --follow
// reads until then; --json prints the reads as one document.
func TestCmdOutput(t *testing.T) {
	type want struct {
		code           int
		stdout, stderr string
		queries        []string
	}
	cases := []struct {
		name  string
		reads []string
		args  []string
		want  want
	}{
		{"one read, running", []string{outputRead(true, "", "a\n", "e\n", false)}, []string{"--wait", "5"},
			want{0, "a\n", "e\n", []string{"waitSecs=5"}}},
		{"one read, ended but more waits", []string{outputRead(false, "3", "a\n", "", true)}, nil,
			want{0, "a\n", "", []string{"waitSecs=0"}}},
		{"one read, ended", []string{outputRead(false, "3", "a\n", "", false)}, nil,
			want{3, "a\n", "the command exited 3", []string{"waitSecs=0"}}},
		{"ended by a signal", []string{outputRead(false, "-1", "", "", false)}, nil,
			want{137, "", "a signal ended the command", []string{"waitSecs=0"}}},
		{"follow reads until the end", []string{outputRead(true, "", "a\n", "", false), outputRead(false, "4", "", "", true),
			outputRead(false, "4", "b\n", "e\n", false)}, []string{"--follow"},
			want{4, "a\nb\n", "e\n", []string{"waitSecs=30", "waitSecs=30", "waitSecs=30"}}},
		{"follow, ended 0", []string{outputRead(true, "", "a\n", "", false), outputRead(false, "0", "b\n", "", false)}, []string{"--follow", "--wait", "2"},
			want{0, "a\nb\n", "", []string{"waitSecs=2", "waitSecs=2"}}},
		{"follow --json: one document", []string{outputRead(true, "", "a\n", "", false), outputRead(false, "0", "b\n", "", false)}, []string{"--follow", "--json"},
			want{0, `"stdout": "a\nb\n"`, "", []string{"waitSecs=30", "waitSecs=30"}}},
		{"--wait out of range", nil, []string{"--wait", "61"}, want{2, "", "--wait: 61 is not 0 to 60 seconds", nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			api := newAPIFake(t, map[string]http.HandlerFunc{
				"GET /v1/sessions/s1/commands/cmd-1/output": func(w http.ResponseWriter, r *http.Request) {
					reply(200, tc.reads[min(int(n.Add(1))-1, len(tc.reads)-1)])(w, r)
				},
			})
			args := append([]string{"cmd", "--session", "s1", "output", "cmd-1"}, tc.args...)
			code, stdout, stderr := cli(t, api.srv.URL, args...)
			if code != tc.want.code || !strings.Contains(stdout, tc.want.stdout) || !strings.Contains(stderr, tc.want.stderr) {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %q (want %q)", code, tc.want.code, stdout, tc.want.stdout, stderr, tc.want.stderr)
			}
			if tc.want.stdout != "" && !strings.Contains(tc.want.stdout, `"`) && stdout != tc.want.stdout {
				t.Errorf("stdout %q, want exactly %q", stdout, tc.want.stdout)
			}
			var queries []string
			for _, s := range api.got {
				queries = append(queries, s.query)
			}
			if fmt.Sprint(queries) != fmt.Sprint(tc.want.queries) {
				t.Errorf("queries %q, want %q", queries, tc.want.queries)
			}
		})
	}
}
