package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

type contextView struct {
	ContextID string `json:"contextId"`
	Language  string `json:"language"`
	Cwd       string `json:"cwd"`
	CreatedAt string `json:"createdAt"`
}

// execIn runs code in a context through the API.
func (s *stack) execIn(sid, contextID, code string) execResult {
	s.t.Helper()
	var r execResult
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/execute", map[string]any{"code": code, "context": contextID}, &r)
	return r
}

// execInProblem runs code in a context and expects a problem of status.
func (s *stack) execInProblem(sid, contextID, code string, status int) string {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"code": code, "context": contextID})
	resp, b := s.req(s.alice, "POST", "/v1/sessions/"+sid+"/execute", bytes.NewReader(body))
	return s.problem(status, resp, b)["detail"].(string)
}

func (s *stack) createContext(sid string, body map[string]any) contextView {
	s.t.Helper()
	var c contextView
	if resp := s.json(s.alice, "POST", "/v1/sessions/"+sid+"/contexts", body, &c); resp.StatusCode != http.StatusCreated {
		s.t.Fatalf("create context: status %d", resp.StatusCode)
	}
	return c
}

func (s *stack) listContexts(sid string) []contextView {
	s.t.Helper()
	var out struct {
		Contexts []contextView `json:"contexts"`
	}
	s.json(s.alice, "GET", "/v1/sessions/"+sid+"/contexts", nil, &out)
	return out.Contexts
}

// TestEndToEndContexts: contexts through the API on the local runtime keep
// their own variables and working directory apart from the default
// context, reset and delete as asked, and say clearly when they are gone
// with a replaced or stopped sandbox.
func TestEndToEndContexts(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const sid = "contexts"
	base := "/v1/sessions/" + sid
	if r := s.exec(s.alice, sid, "import os\nos.makedirs('work', exist_ok=True)\nx = 1"); !r.Success {
		t.Fatalf("setup: %+v", r)
	}
	c := s.createContext(sid, map[string]any{"cwd": "work"})
	if c.ContextID == "" || c.Language != "python" || c.Cwd != "/home/user/work" || c.CreatedAt == "" {
		t.Fatalf("created %+v", c)
	}

	t.Run("own variables and cwd", func(t *testing.T) {
		if r := s.execIn(sid, c.ContextID, "import os\nx = 2\ny = 5\nprint(os.getcwd())"); r.Stdout != "/home/user/work\n" {
			t.Fatalf("cwd in the context: %+v", r)
		}
		if r := s.exec(s.alice, sid, "(x, 'y' in globals())"); r.text() != "(1, False)" {
			t.Fatalf("the default context sees %+v", r)
		}
		if r := s.execIn(sid, c.ContextID, "(x, y)"); r.text() != "(2, 5)" {
			t.Fatalf("the context sees %+v", r)
		}
		if r := s.exec(s.alice, sid, "import os\nprint(os.getcwd())"); r.Stdout != "/home/user\n" {
			t.Fatalf("the default context's cwd: %+v", r)
		}
	})

	t.Run("a bash context", func(t *testing.T) {
		b := s.createContext(sid, map[string]any{"language": "bash", "cwd": "/tmp"})
		if r := s.execIn(sid, b.ContextID, "pwd"); r.Stdout != "/tmp\n" {
			t.Fatalf("bash context: %+v", r)
		}
		s.json(s.alice, "DELETE", base+"/contexts/"+b.ContextID, nil, nil)
	})

	t.Run("list", func(t *testing.T) {
		if got := s.listContexts(sid); len(got) != 1 || got[0] != c {
			t.Fatalf("list = %+v, want [%+v]", got, c)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		cases := []struct {
			body   string
			status int
			detail string
		}{
			{`{"cwd":"no/such/dir"}`, 400, "/home/user/no/such/dir"},
			{`{"language":"cobol"}`, 400, "cobol"},
			{`{"language":"Py thon"}`, 400, "language must match"},
			{`{"cwd":7}`, 400, "cwd"},
		}
		for _, tc := range cases {
			resp, b := s.req(s.alice, "POST", base+"/contexts", strings.NewReader(tc.body))
			d := s.problem(tc.status, resp, b)["detail"].(string)
			t.Logf("%s -> %s", tc.body, d)
			if !strings.Contains(d, tc.detail) {
				t.Errorf("%s: detail %q does not name %q", tc.body, d, tc.detail)
			}
		}
		if d := s.execInProblem(sid, "foo", "1", 404); !strings.Contains(d, `context "foo" not found`) {
			t.Fatalf("unknown context: %q", d)
		}
	})

	t.Run("reset clears its state only", func(t *testing.T) {
		s.json(s.alice, "POST", base+"/contexts/"+c.ContextID+"/reset", nil, nil)
		if r := s.execIn(sid, c.ContextID, "import os\nprint('x' in globals(), os.getcwd())"); r.Stdout != "False /home/user/work\n" {
			t.Fatalf("after reset the context sees %+v", r)
		}
		if r := s.exec(s.alice, sid, "x"); r.text() != "1" {
			t.Fatalf("after the context's reset the default context sees %+v", r)
		}
	})

	t.Run("the session's reset clears every context", func(t *testing.T) {
		s.execIn(sid, c.ContextID, "z = 3")
		s.json(s.alice, "POST", base+"/reset", nil, nil)
		if r := s.execIn(sid, c.ContextID, "import os\nprint('z' in globals(), os.getcwd())"); r.Stdout != "False /home/user/work\n" {
			t.Fatalf("after the session's reset the context sees %+v", r)
		}
		if r := s.exec(s.alice, sid, "'x' in globals()"); r.text() != "False" {
			t.Fatalf("after the session's reset the default context sees %+v", r)
		}
	})

	t.Run("delete then execute is 404", func(t *testing.T) {
		resp, _ := s.req(s.alice, "DELETE", base+"/contexts/"+c.ContextID, nil)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete: %d", resp.StatusCode)
		}
		if d := s.execInProblem(sid, c.ContextID, "1", 404); !strings.Contains(d, `context "`+c.ContextID+`" not found`) {
			t.Fatalf("after delete: %q", d)
		}
		if got := s.listContexts(sid); len(got) != 0 {
			t.Fatalf("list after delete = %+v", got)
		}
	})

	t.Run("a replaced sandbox takes its contexts", func(t *testing.T) {
		g := s.createContext(sid, nil)
		var v sessionView
		s.json(s.alice, "GET", base+"/sandbox", nil, &v)
		if err := s.sandboxes.Kill(context.Background(), v.SandboxID); err != nil {
			t.Fatal(err)
		}
		d := s.execInProblem(sid, g.ContextID, "1", http.StatusGone)
		for _, want := range []string{`context "` + g.ContextID + `"`, "the session's sandbox was replaced at 20", "contexts from before are gone"} {
			if !strings.Contains(d, want) {
				t.Fatalf("410 detail %q does not say %q", d, want)
			}
		}
		resp, b := s.req(s.alice, "POST", base+"/contexts/"+g.ContextID+"/reset", nil)
		s.problem(http.StatusGone, resp, b)
		if got := s.listContexts(sid); len(got) != 0 {
			t.Fatalf("list after the replacement = %+v", got)
		}
		if r := s.exec(s.alice, sid, "'x' in globals()"); r.text() != "False" {
			t.Fatalf("the default context of the new sandbox: %+v", r)
		}
	})

	t.Run("a stopped session's contexts are gone and start nothing", func(t *testing.T) {
		g := s.createContext(sid, nil)
		s.json(s.alice, "POST", base+"/sandbox/stop", nil, nil)
		d := s.execInProblem(sid, g.ContextID, "1", http.StatusGone)
		if !strings.Contains(d, "the session's sandbox was stopped") {
			t.Fatalf("410 detail %q", d)
		}
		if got := s.sessionSandboxes("alice", sid); len(got) != 0 {
			t.Fatalf("a gone context started sandboxes %v", got)
		}
	})
}
