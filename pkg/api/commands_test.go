package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

const fakeCommandID = "cmd-0123abcd-mhx2k1c0-00ff00ff"

func (f *fakeManager) RunCommand(ctx context.Context, key session.Key, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error) {
	if err := f.record("RunCommand", key); err != nil {
		return nil, err
	}
	if onEvent != nil {
		onEvent(session.Event{Started: true})
		onEvent(session.Event{Stdout: "out\n"})
		onEvent(session.Event{Stderr: "err\n"})
	}
	return &session.CommandResult{ExitCode: 2, Stdout: "out\n", Stderr: "err\n", DurationMs: int64(req.TimeoutSecs)}, nil
}

func (f *fakeManager) StartCommand(ctx context.Context, key session.Key, req session.CommandRequest) (*session.CommandStarted, error) {
	if err := f.record("StartCommand", key); err != nil {
		return nil, err
	}
	return &session.CommandStarted{CommandID: fakeCommandID, PID: 42, StartedAt: fakeNow}, nil
}

func (f *fakeManager) ListCommands(ctx context.Context, key session.Key) ([]session.CommandInfo, error) {
	if err := f.record("ListCommands", key); err != nil {
		return nil, err
	}
	return []session.CommandInfo{{CommandID: fakeCommandID, PID: 42, Cmd: "sleep 9", Cwd: "/home/user", StartedAt: fakeNow, Running: true}}, nil
}

func (f *fakeManager) CommandStatus(ctx context.Context, key session.Key, commandID string) (*session.CommandInfo, error) {
	if err := f.record("CommandStatus", key); err != nil {
		return nil, err
	}
	if commandID != fakeCommandID {
		return nil, session.Errorf(session.ErrNotFound, "command %q not found in session %q", commandID, key.SessionID)
	}
	return &session.CommandInfo{CommandID: commandID, PID: 42, Cmd: "sleep 9", Cwd: "/home/user", StartedAt: fakeNow, Running: true}, nil
}

func (f *fakeManager) AttachCommand(ctx context.Context, key session.Key, commandID string, onEvent func(session.Event)) (*session.CommandResult, error) {
	if err := f.record("AttachCommand", key); err != nil {
		return nil, err
	}
	if onEvent != nil {
		onEvent(session.Event{Started: true})
		onEvent(session.Event{Stdout: "later\n"})
	}
	if commandID == "cmd-forever" {
		<-ctx.Done()
		return nil, fmt.Errorf("attach: %w", ctx.Err())
	}
	return &session.CommandResult{CommandID: commandID, Stdout: "later\n"}, nil
}

func (f *fakeManager) ReadCommand(_ context.Context, key session.Key, commandID string, wait time.Duration) (*session.CommandOutput, error) {
	if err := f.record("ReadCommand", key); err != nil {
		return nil, err
	}
	if commandID != fakeCommandID {
		return nil, session.Errorf(session.ErrNotFound, "command %q not found in session %q", commandID, key.SessionID)
	}
	return &session.CommandOutput{CommandID: commandID, Running: true, Stdout: fmt.Sprintf("waited %s\n", wait),
		StdoutPath: session.CommandOutputDir + "/" + commandID + "/stdout", StderrPath: session.CommandOutputDir + "/" + commandID + "/stderr"}, nil
}

func (f *fakeManager) KillCommand(ctx context.Context, key session.Key, commandID string) error {
	if err := f.record("KillCommand", key); err != nil {
		return err
	}
	if commandID != fakeCommandID {
		return session.Errorf(session.ErrNotFound, "command %q is not running in session %q", commandID, key.SessionID)
	}
	return nil
}

// TestCommandRoutes: each commands route reaches the Manager with the
// caller's identity and answers in its documented shape; JSON and NDJSON
// where both are offered.
func TestCommandRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	base := "/v1/sessions/s1/commands"
	resp, body := h.do(call{method: "POST", path: base, body: `{"cmd":"ls","cwd":"data","envs":{"A":"b"},"timeoutSecs":7}`})
	var res session.CommandResult
	if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || res.ExitCode != 2 || res.Stderr != "err\n" || res.DurationMs != 7 {
		t.Fatalf("json: %d %s", resp.StatusCode, body)
	}
	if k := h.fake.lastKey(); k.Tenant != "t1" || k.Principal != "alice" || k.SessionID != "s1" {
		t.Errorf("identity %+v", k)
	}
	resp, body = h.do(call{method: "POST", path: base, body: `{"cmd":"ls"}`, headers: map[string]string{"Accept": "application/x-ndjson"}})
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if resp.StatusCode != 200 || len(lines) != 4 || lines[0] != `{"type":"start"}` || lines[1] != `{"type":"stdout","text":"out\n"}` ||
		lines[2] != `{"type":"stderr","text":"err\n"}` || !strings.HasPrefix(lines[3], `{"type":"done","summary":{"exitCode":2`) {
		t.Fatalf("ndjson: %d %q", resp.StatusCode, lines)
	}

	resp, body = h.do(call{method: "POST", path: base, body: `{"cmd":"sleep 9","background":true}`})
	var started session.CommandStarted
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(body, &started) != nil || started.CommandID != fakeCommandID || started.PID != 42 ||
		resp.Header.Get("Location") != base+"/"+fakeCommandID {
		t.Fatalf("background: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	resp, body = h.do(call{method: "GET", path: base})
	var list struct {
		Commands []session.CommandInfo `json:"commands"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &list) != nil || len(list.Commands) != 1 || !list.Commands[0].StartedAt.Equal(fakeNow) {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}

	resp, body = h.do(call{method: "GET", path: base + "/" + fakeCommandID})
	var info session.CommandInfo
	if resp.StatusCode != 200 || json.Unmarshal(body, &info) != nil || !info.Running || info.Cmd != "sleep 9" {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do(call{method: "GET", path: base + "/" + fakeCommandID, headers: map[string]string{"Accept": "application/x-ndjson"}})
	lines = strings.Split(strings.TrimSpace(string(body)), "\n")
	if resp.StatusCode != 200 || len(lines) != 3 || lines[1] != `{"type":"stdout","text":"later\n"}` || !strings.Contains(lines[2], `"commandId":"`+fakeCommandID) {
		t.Fatalf("attach: %d %q", resp.StatusCode, lines)
	}
	resp, body = h.do(call{method: "GET", path: base + "/" + fakeCommandID + "/output?waitSecs=3"})
	var read session.CommandOutput
	if resp.StatusCode != 200 || json.Unmarshal(body, &read) != nil || !read.Running || read.Stdout != "waited 3s\n" ||
		read.StdoutPath != session.CommandOutputDir+"/"+fakeCommandID+"/stdout" || !strings.Contains(string(body), `"more":false`) {
		t.Fatalf("read output: %d %s", resp.StatusCode, body)
	}
	for _, q := range []string{"waitSecs=61", "waitSecs=-1", "waitSecs=soon"} {
		resp, body = h.do(call{method: "GET", path: base + "/" + fakeCommandID + "/output?" + q})
		if p := checkProblem(t, resp, body, http.StatusBadRequest); !strings.Contains(p.Detail, "waitSecs") {
			t.Errorf("%s: %q, want it to name waitSecs", q, p.Detail)
		}
	}
	resp, body = h.do(call{method: "GET", path: base + "/nope/output"})
	checkProblem(t, resp, body, http.StatusNotFound)
	resp, body = h.do(call{method: "GET", path: base + "/nope"})
	if p := checkProblem(t, resp, body, http.StatusNotFound); !strings.Contains(p.Detail, `command "nope" not found`) {
		t.Fatalf("unknown command: %q", p.Detail)
	}

	resp, body = h.do(call{method: "POST", path: base + "/" + fakeCommandID + "/kill"})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("kill: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do(call{method: "POST", path: base + "/nope/kill"})
	checkProblem(t, resp, body, http.StatusNotFound)
}

func TestCommandBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bad := []struct {
		name, body, detail string
		status             int
	}{
		{"no cmd", `{}`, `"cmd" is required`, 400},
		{"unknown field", `{"cmd":"ls","shell":"zsh"}`, "shell", 400},
		{"wrong type", `{"cmd":"ls","background":"yes"}`, "background", 400},
		{"not json", `ls`, "JSON", 400},
	}
	for _, b := range bad {
		resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/commands", body: b.body})
		if p := checkProblem(t, resp, body, b.status); !strings.Contains(p.Detail, b.detail) {
			t.Errorf("%s: detail %q, want it to name %q", b.name, p.Detail, b.detail)
		}
	}
	resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/commands/x", headers: map[string]string{"Accept": "text/html"}})
	checkProblem(t, resp, body, http.StatusNotAcceptable)
	resp, body = h.do(call{method: "GET", path: "/v1/sessions/s1/commands", key: "-"})
	checkProblem(t, resp, body, http.StatusUnauthorized)
	if got := h.fake.called(); len(got) != 0 {
		t.Fatalf("bad requests reached the Manager: %v", got)
	}
}

// TestCommandAttachIsBounded: a reattachment still following its command
// when its time is up ends with a failure line saying to attach again.
func TestCommandAttachIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.srv.Config.Handler.(*Server).commandAttach = 50 * time.Millisecond
	resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/commands/cmd-forever", headers: map[string]string{"Accept": "application/x-ndjson"}})
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	last := lines[len(lines)-1]
	if resp.StatusCode != 200 || lines[1] != `{"type":"stdout","text":"later\n"}` || !strings.Contains(last, `"type":"failure"`) ||
		!strings.Contains(last, `still runs after 50ms attached to it; attach again`) || !strings.Contains(last, "/problems/timeout") {
		t.Fatalf("%d %q", resp.StatusCode, lines)
	}
}
