package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
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
