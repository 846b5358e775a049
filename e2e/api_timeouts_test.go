package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// timeoutView is the part of an execution result a timeout is about.
type timeoutView struct {
	Success         bool   `json:"success"`
	Stdout          string `json:"stdout"`
	TimedOut        bool   `json:"timedOut"`
	KernelRestarted bool   `json:"kernelRestarted"`
	Error           *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"error"`
}

// execTimed runs code with a timeout in JSON or NDJSON mode and returns the
// result; a timeout must answer 200 either way.
func (s *stack) execTimed(sid, code string, timeoutSecs int, ndjson bool) timeoutView {
	s.t.Helper()
	body, _ := json.Marshal(map[string]any{"code": code, "timeoutSecs": timeoutSecs})
	accept, path := "application/json", "/execute"
	if ndjson {
		accept, path = "application/x-ndjson", "/execute/stream"
	}
	resp, raw := s.req(s.alice, "POST", "/v1/sessions/"+sid+path, strings.NewReader(string(body)), "Accept", accept)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var v timeoutView
	if !ndjson {
		if err := json.Unmarshal(raw, &v); err != nil {
			s.t.Fatalf("result %s: %v", raw, err)
		}
		return v
	}
	// The lines carry the output and the exception; done, the summary.
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	var stdout strings.Builder
	var last struct {
		Type    string           `json:"type"`
		Text    string           `json:"text"`
		Error   *json.RawMessage `json:"error"`
		Summary *timeoutView     `json:"summary"`
	}
	var errLine *json.RawMessage
	for sc.Scan() {
		last.Text, last.Error = "", nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			s.t.Fatalf("line %q: %v", sc.Text(), err)
		}
		switch last.Type {
		case "stdout":
			stdout.WriteString(last.Text)
		case "error":
			errLine = last.Error
		}
	}
	if last.Type != "done" || last.Summary == nil || errLine == nil {
		s.t.Fatalf("stream %s: want a live error line and a done line last", raw)
	}
	v = *last.Summary
	v.Stdout = stdout.String()
	if err := json.Unmarshal(*errLine, &v.Error); err != nil {
		s.t.Fatalf("error line %s: %v", *errLine, err)
	}
	return v
}

// TestEndToEndTimeoutIsAResult: code past its timeout answers 200 with a
// TimeoutError naming the limit, timedOut and the output that came before,
// in JSON and NDJSON; the kernel is interrupted and keeps its state, unless
// the code ignores the interrupt, when the kernel is restarted and the
// result says the state is gone. A run that timed out is failed with that
// result.
func TestEndToEndTimeoutIsAResult(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const sid = "timeouts"
	s.exec(s.alice, sid, "kept = 'yes'")
	slow := "import time\nprint('before', flush=True)\ntime.sleep(30)\nprint('after')"
	for _, ndjson := range []bool{false, true} {
		start := time.Now()
		r := s.execTimed(sid, slow, 1, ndjson)
		if !r.TimedOut || r.Success || r.Error == nil || r.Error.Name != "TimeoutError" || r.Stdout != "before\n" || r.KernelRestarted {
			t.Fatalf("ndjson %v: %+v", ndjson, r)
		}
		if !strings.Contains(r.Error.Value, "exceeded its timeout of 1 s") || !strings.Contains(r.Error.Value, "state is kept") {
			t.Errorf("ndjson %v: error value %q", ndjson, r.Error.Value)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("ndjson %v: a 1 s timeout took %s to answer", ndjson, d)
		}
		if got := s.exec(s.alice, sid, "kept"); got.text() != "yes" {
			t.Fatalf("ndjson %v: state after an obeyed interrupt: %+v", ndjson, got)
		}
	}

	// Code that swallows the interrupt costs the kernel.
	stubborn := "import time\nprint('stubborn', flush=True)\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"
	r := s.execTimed(sid, stubborn, 1, false)
	if !r.TimedOut || !r.KernelRestarted || r.Stdout != "stubborn\n" || r.Error == nil || !strings.Contains(r.Error.Value, "state is gone") {
		t.Fatalf("stubborn: %+v", r)
	}
	if got := s.exec(s.alice, sid, "'kept' in dir()"); got.text() != "False" {
		t.Fatalf("state after a restarted kernel: %+v", got)
	}

	// User code raising TimeoutError is an ordinary exception.
	if got := s.execTimed(sid, "raise TimeoutError('socket')", 5, false); got.TimedOut || got.Error == nil || got.Error.Name != "TimeoutError" {
		t.Fatalf("code's own TimeoutError: %+v", got)
	}

	var accepted struct {
		RunID string `json:"runId"`
	}
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/runs", map[string]any{"code": slow, "timeoutSecs": 1}, &accepted)
	var run struct {
		Status string       `json:"status"`
		Error  string       `json:"error"`
		Result *timeoutView `json:"result"`
	}
	testwait.Until(t, time.Minute, func() error {
		s.json(s.alice, "GET", "/v1/runs/"+accepted.RunID, nil, &run)
		if run.Status != "failed" && run.Status != "succeeded" {
			return fmt.Errorf("run still %s", run.Status)
		}
		return nil
	})
	if run.Status != "failed" || run.Result == nil || !run.Result.TimedOut || run.Result.Stdout != "before\n" || !strings.HasPrefix(run.Error, "TimeoutError: execution exceeded") {
		t.Fatalf("timed-out run: %+v", run)
	}
}
