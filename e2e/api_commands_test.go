package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// commandResult is a command's outcome as the API answers it.
type commandResult struct {
	CommandID  string `json:"commandId"`
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMs int64  `json:"durationMs"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timedOut"`
	Restarted  bool   `json:"restarted"`
	Error      *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"error"`
}

type commandInfo struct {
	CommandID string         `json:"commandId"`
	PID       int            `json:"pid"`
	Cmd       string         `json:"cmd"`
	Cwd       string         `json:"cwd"`
	StartedAt time.Time      `json:"startedAt"`
	Running   bool           `json:"running"`
	Result    *commandResult `json:"result"`
}

// command runs a foreground command in JSON mode.
func (s *stack) command(sid string, body map[string]any) commandResult {
	s.t.Helper()
	var r commandResult
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/commands", body, &r)
	return r
}

func (s *stack) listCommands(sid string) []commandInfo {
	s.t.Helper()
	var list struct {
		Commands []commandInfo `json:"commands"`
	}
	s.json(s.alice, "GET", "/v1/sessions/"+sid+"/commands", nil, &list)
	return list.Commands
}

// ndjsonLine is one line of a command's stream.
type ndjsonLine struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Error json.RawMessage `json:"error"`
	// Summary is the done line's; Result joins it with the lines before.
	Summary *commandResult `json:"summary"`
	Result  *commandResult `json:"-"`
}

// joined is the whole result a done line ends: its summary with the
// output and the error the lines before it carried.
func joined(t *testing.T, seen []ndjsonLine, done ndjsonLine) *commandResult {
	t.Helper()
	if done.Summary == nil {
		return nil
	}
	r := *done.Summary
	for _, l := range seen {
		switch l.Type {
		case "stdout":
			r.Stdout += l.Text
		case "stderr":
			r.Stderr += l.Text
		case "error":
			if err := json.Unmarshal(l.Error, &r.Error); err != nil {
				t.Fatalf("error line %s: %v", l.Error, err)
			}
		}
	}
	return &r
}

// openStream sends a request asking for NDJSON and returns a scanner over
// the answer's lines, to be read while the command runs.
func (s *stack) openStream(t *testing.T, method, path, body string) *bufio.Scanner {
	t.Helper()
	var req *http.Request
	if body != "" {
		req, _ = http.NewRequest(method, s.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req, _ = http.NewRequest(method, s.url+path, nil)
	}
	req.Header.Set("Authorization", "Bearer "+s.alice)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%s %s: status %d %s", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}

// readUntil reads lines until one satisfies stop (returned) or the stream
// ends (nil); lines before it are appended to seen.
func readUntil(t *testing.T, sc *bufio.Scanner, seen *[]ndjsonLine, stop func(ndjsonLine) bool) *ndjsonLine {
	t.Helper()
	for sc.Scan() {
		var l ndjsonLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		*seen = append(*seen, l)
		if l.Type == "done" {
			l.Result = joined(t, *seen, l)
		}
		if stop(l) {
			return &l
		}
	}
	return nil
}

func stdoutHas(text string) func(ndjsonLine) bool {
	return func(l ndjsonLine) bool { return l.Type == "stdout" && strings.Contains(l.Text, text) }
}

func isDone(l ndjsonLine) bool { return l.Type == "done" }

// TestEndToEndCommands: shell commands through the HTTP API on the local
// runtime: exit codes as results, stderr, cwd, envs, live output, a
// timeout as a result with the output before it, background commands
// listed, reattached to and killed, and the ids of a replaced sandbox.
func TestEndToEndCommands(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const sid = "shell"
	base := "/v1/sessions/" + sid + "/commands"

	t.Run("exit code, stderr, cwd and envs", func(t *testing.T) {
		r := s.command(sid, map[string]any{"cmd": "echo out; echo err >&2; pwd; echo \"$GREETING\"; exit 3",
			"cwd": "/tmp", "envs": map[string]string{"GREETING": "hi there"}})
		if r.ExitCode != 3 || r.Stdout != "out\n/tmp\nhi there\n" || r.Stderr != "err\n" || r.TimedOut || r.Error != nil || r.Restarted {
			t.Fatalf("result %+v", r)
		}
		if r := s.command(sid, map[string]any{"cmd": "mkdir -p data/sub && cd data/sub && pwd"}); r.ExitCode != 0 || r.Stdout != "/home/user/data/sub\n" {
			t.Fatalf("default cwd: %+v", r)
		}
		if r := s.command(sid, map[string]any{"cmd": "pwd", "cwd": "data/sub"}); r.Stdout != "/home/user/data/sub\n" {
			t.Fatalf("relative cwd: %+v", r)
		}
		// The kernel and the shell share the sandbox.
		if r := s.exec(s.alice, sid, "open('data/sub/x', 'w').write('k')"); r.text() != "1" {
			t.Fatalf("kernel: %+v", r)
		}
		if r := s.command(sid, map[string]any{"cmd": "cat x", "cwd": "data/sub"}); r.Stdout != "k" {
			t.Fatalf("file from the kernel: %+v", r)
		}
		resp, body := s.req(s.alice, "POST", base, strings.NewReader(`{"cmd":"pwd","cwd":"/no/such/dir"}`))
		if p := s.problem(http.StatusBadRequest, resp, body); !strings.Contains(fmt.Sprint(p["detail"]), "cwd /no/such/dir is not a directory") {
			t.Fatalf("missing cwd: %v", p)
		}
		resp, body = s.req(s.alice, "POST", base, strings.NewReader(`{"cmd":""}`))
		if p := s.problem(http.StatusBadRequest, resp, body); p["detail"] != "cmd is empty" {
			t.Fatalf("empty cmd: %v", p)
		}
	})

	t.Run("live output in NDJSON", func(t *testing.T) {
		cmd := "echo waiting; while [ ! -e go.flag ]; do sleep 0.05; done; echo released >&2; exit 4"
		body, _ := json.Marshal(map[string]any{"cmd": cmd, "timeoutSecs": 60})
		sc := s.openStream(t, "POST", base, string(body))
		var seen []ndjsonLine
		// "waiting" arrives while the command is blocked on the flag,
		// which only this test can create: it came before the end.
		if readUntil(t, sc, &seen, stdoutHas("waiting")) == nil {
			t.Fatalf("stream ended before the first line: %+v", seen)
		}
		if seen[0].Type != "start" {
			t.Fatalf("first line %+v", seen[0])
		}
		s.json(s.alice, "PUT", "/v1/sessions/"+sid+"/files/content?path=go.flag", nil, nil)
		done := readUntil(t, sc, &seen, isDone)
		if done == nil || done.Result == nil || done.Result.ExitCode != 4 || done.Result.Stderr != "released\n" || done.Result.Stdout != "waiting\n" {
			t.Fatalf("lines %+v", seen)
		}
		sawErr := false
		for _, l := range seen {
			sawErr = sawErr || (l.Type == "stderr" && l.Text == "released\n")
		}
		if !sawErr {
			t.Fatalf("no live stderr line: %+v", seen)
		}
	})

	t.Run("a timeout is a result with the output before it", func(t *testing.T) {
		const cmd = "echo before; echo warned >&2; sleep 30; echo after"
		r := s.command(sid, map[string]any{"cmd": cmd, "timeoutSecs": 1})
		if !r.TimedOut || r.Stdout != "before\n" || r.Stderr != "warned\n" || r.Error == nil || r.Error.Name != "TimeoutError" ||
			!strings.Contains(r.Error.Value, "exceeded its timeout of 1 s") || r.ExitCode == 0 {
			t.Fatalf("json: %+v", r)
		}
		body, _ := json.Marshal(map[string]any{"cmd": cmd, "timeoutSecs": 1})
		sc := s.openStream(t, "POST", base, string(body))
		var seen []ndjsonLine
		done := readUntil(t, sc, &seen, isDone)
		if done == nil || !done.Result.TimedOut || done.Result.Stdout != "before\n" || done.Result.Error == nil {
			t.Fatalf("ndjson: %+v", seen)
		}
		live := map[string]bool{}
		for _, l := range seen {
			live[l.Type+":"+l.Text] = true
			if l.Type == "error" && strings.Contains(string(l.Error), "TimeoutError") {
				live["timeout"] = true
			}
		}
		if !live["stdout:before\n"] || !live["timeout"] {
			t.Fatalf("ndjson lines %+v", seen)
		}
		// The processes were killed: nothing of ours runs.
		if list := s.listCommands(sid); len(list) != 0 {
			t.Fatalf("still running after timeouts: %+v", list)
		}
	})

	t.Run("background: list, status, reattach, kill", func(t *testing.T) {
		var started struct {
			CommandID string    `json:"commandId"`
			PID       int       `json:"pid"`
			StartedAt time.Time `json:"startedAt"`
		}
		// It prints only once this test lets it: output printed before a
		// reattachment is kept for it by the local runtime (E2B's envd
		// streams only what comes after).
		const cmd = "while [ ! -e go.flag ]; do sleep 0.05; done; echo started; " +
			"while [ ! -e stop.flag ]; do sleep 0.05; done; echo finishing; exit 7"
		resp := s.json(s.alice, "POST", base, map[string]any{"cmd": cmd, "background": true, "cwd": "data"}, &started)
		if resp.StatusCode != http.StatusAccepted || started.CommandID == "" || started.PID == 0 {
			t.Fatalf("start: %d %+v", resp.StatusCode, started)
		}
		var sleeper struct {
			CommandID string `json:"commandId"`
		}
		s.json(s.alice, "POST", base, map[string]any{"cmd": "sleep 600", "background": true}, &sleeper)

		list := s.listCommands(sid)
		if len(list) != 2 || list[0].CommandID != started.CommandID || list[0].Cmd != cmd || list[0].Cwd != "/home/user/data" ||
			!list[0].Running || !list[0].StartedAt.Equal(started.StartedAt) || list[1].CommandID != sleeper.CommandID {
			t.Fatalf("list %+v, started %+v", list, started)
		}
		var info commandInfo
		s.json(s.alice, "GET", base+"/"+started.CommandID, nil, &info)
		if !info.Running || info.PID != started.PID || info.Result != nil {
			t.Fatalf("status %+v", info)
		}

		// Reattached: what it printed while nobody listened, then live
		// output once this test lets it go on.
		s.json(s.alice, "PUT", "/v1/sessions/"+sid+"/files/content?path=data/go.flag", nil, nil)
		sc := s.openStream(t, "GET", base+"/"+started.CommandID, "")
		var seen []ndjsonLine
		if readUntil(t, sc, &seen, stdoutHas("started")) == nil {
			t.Fatalf("reattach: %+v", seen)
		}
		s.json(s.alice, "PUT", "/v1/sessions/"+sid+"/files/content?path=data/stop.flag", nil, nil)
		done := readUntil(t, sc, &seen, isDone)
		if done == nil || done.Result.ExitCode != 7 || !strings.Contains(done.Result.Stdout, "finishing") || done.Result.CommandID != started.CommandID {
			t.Fatalf("reattach lines %+v", seen)
		}
		// Ended, it is remembered with how it ended.
		s.json(s.alice, "GET", base+"/"+started.CommandID, nil, &info)
		if info.Running || info.Result == nil || info.Result.ExitCode != 7 {
			t.Fatalf("status after the end %+v", info)
		}

		s.json(s.alice, "POST", base+"/"+sleeper.CommandID+"/kill", nil, nil)
		sc = s.openStream(t, "GET", base+"/"+sleeper.CommandID, "")
		seen = nil
		if done := readUntil(t, sc, &seen, isDone); done == nil || done.Result.ExitCode == 0 {
			t.Fatalf("killed command's end: %+v", seen)
		}
		if list := s.listCommands(sid); len(list) != 0 {
			t.Fatalf("list after the end and the kill: %+v", list)
		}
		rresp, body := s.req(s.alice, "POST", base+"/"+sleeper.CommandID+"/kill", nil)
		if p := s.problem(http.StatusNotFound, rresp, body); !strings.Contains(fmt.Sprint(p["detail"]), "is not running") {
			t.Fatalf("second kill: %v", p)
		}
		rresp, body = s.req(s.alice, "GET", base+"/nope", nil)
		if p := s.problem(http.StatusNotFound, rresp, body); p["detail"] != `command "nope" not found in session "shell"` {
			t.Fatalf("unknown id: %v", p)
		}
		// Another principal's session of the same name is another session.
		rresp, body = s.req(s.bob, "GET", base+"/"+started.CommandID, nil)
		s.problem(http.StatusNotFound, rresp, body)
	})

	t.Run("concurrent commands each get their own output", func(t *testing.T) {
		// Each waits until all have started, so they run at the same time.
		const n = 5
		results := make([]commandResult, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				cmd := fmt.Sprintf("touch here.%d; while [ $(ls here.* | wc -l) -lt %d ]; do sleep 0.05; done; echo out-%d; echo err-%d >&2; exit %d", i, n, i, i, i)
				body, _ := json.Marshal(map[string]any{"cmd": cmd, "cwd": "/tmp", "timeoutSecs": 60})
				resp, raw := s.req(s.alice, "POST", base, strings.NewReader(string(body)))
				if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &results[i]) != nil {
					t.Errorf("command %d: %d %s", i, resp.StatusCode, raw)
				}
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.ExitCode != i || r.Stdout != fmt.Sprintf("out-%d\n", i) || r.Stderr != fmt.Sprintf("err-%d\n", i) {
				t.Errorf("command %d: %+v", i, r)
			}
		}
	})

	t.Run("a client that hangs up kills its foreground command", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"cmd": "echo started; sleep 600", "timeoutSecs": 600})
		req, _ := http.NewRequest("POST", s.url+base, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+s.alice)
		req.Header.Set("Accept", "application/x-ndjson")
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := s.client.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var seen []ndjsonLine
		if readUntil(t, sc, &seen, stdoutHas("started")) == nil {
			t.Fatalf("stream: %+v", seen)
		}
		// While it runs, it is listed.
		if list := s.listCommands(sid); len(list) != 1 || list[0].Cmd != "echo started; sleep 600" {
			t.Fatalf("list while running: %+v", list)
		}
		cancel()
		resp.Body.Close()
		// The service notices the hang-up and kills the process; wait for
		// it, without asserting how long it takes.
		testwait.Until(t, time.Minute, func() error {
			if list := s.listCommands(sid); len(list) != 0 {
				return fmt.Errorf("still running after the client hung up: %+v", list)
			}
			return nil
		})
	})

	t.Run("a sandbox replaced since the command started", func(t *testing.T) {
		var started struct {
			CommandID string `json:"commandId"`
		}
		s.json(s.alice, "POST", base, map[string]any{"cmd": "sleep 600", "background": true}, &started)
		var v sessionView
		s.json(s.alice, "GET", "/v1/sessions/"+sid+"/sandbox", nil, &v)
		if err := s.sandboxes.Kill(context.Background(), v.SandboxID); err != nil {
			t.Fatal(err)
		}
		resp, body := s.req(s.alice, "GET", base+"/"+started.CommandID, nil)
		if p := s.problem(http.StatusGone, resp, body); !strings.Contains(fmt.Sprint(p["detail"]), "has no sandbox now") {
			t.Fatalf("status with the sandbox gone: %v", p)
		}
		// The next command gets a fresh sandbox and says so.
		r := s.command(sid, map[string]any{"cmd": "echo fresh"})
		if !r.Restarted || r.Stdout != "fresh\n" {
			t.Fatalf("command on a replaced sandbox: %+v", r)
		}
		for _, c := range []struct{ method, path string }{{"GET", base + "/" + started.CommandID}, {"POST", base + "/" + started.CommandID + "/kill"}} {
			resp, body := s.req(s.alice, c.method, c.path, nil)
			if p := s.problem(http.StatusGone, resp, body); !strings.Contains(fmt.Sprint(p["detail"]), "has since been replaced") {
				t.Fatalf("%s %s: %v", c.method, c.path, p)
			}
		}
		if list := s.listCommands(sid); len(list) != 0 {
			t.Fatalf("list on the fresh sandbox: %+v", list)
		}
	})
}
