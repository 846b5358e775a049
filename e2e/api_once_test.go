package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// onceSandboxes lists the stack's live one-shot sandboxes.
func (s *stack) onceSandboxes() []string {
	s.t.Helper()
	infos, err := s.sandboxes.List(context.Background(), map[string]string{session.MetaStack: s.stackID, session.MetaOnce: "true"})
	if err != nil {
		s.t.Fatalf("list sandboxes: %v", err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	return ids
}

// noOnceSandboxLeft waits for the one-shot sandboxes to be gone: the kill
// may finish just after the answer.
func (s *stack) noOnceSandboxLeft(what string) {
	s.t.Helper()
	testwait.Until(s.t, 30*time.Second, func() error {
		if ids := s.onceSandboxes(); len(ids) > 0 {
			return fmt.Errorf("%s: one-shot sandboxes left alive: %v", what, ids)
		}
		return nil
	})
}

// TestEndToEndExecuteOnce: POST /v1/execute runs code in a fresh sandbox,
// answers its result with artifacts that outlive the sandbox, records no
// session, and kills the sandbox after a result, a timeout and a client
// that hung up; the Go client and NDJSON streaming work as for a session.
func TestEndToEndExecuteOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var res struct {
		Success   bool   `json:"success"`
		Stdout    string `json:"stdout"`
		TimedOut  bool   `json:"timedOut"`
		Artifacts []struct {
			Path        string `json:"path"`
			DownloadURL string `json:"downloadUrl"`
		} `json:"artifacts"`
		Results []struct {
			Text string `json:"text"`
		} `json:"results"`
	}
	resp := s.json(s.alice, "POST", "/v1/execute", map[string]any{
		"code": "import os\nopen('report.txt', 'w').write('made once')\nprint(os.environ['GREETING'])\n6 * 7", "envs": map[string]string{"GREETING": "hi"}}, &res)
	if resp.StatusCode != 200 || !res.Success || res.Stdout != "hi\n" || len(res.Results) != 1 || res.Results[0].Text != "42" || len(res.Artifacts) != 1 {
		t.Fatalf("result %+v", res)
	}
	s.noOnceSandboxLeft("after a result")
	get, err := s.client.Get(res.Artifacts[0].DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(get.Body)
	get.Body.Close()
	if get.StatusCode != 200 || string(body) != "made once" {
		t.Fatalf("artifact after the kill: %d %q", get.StatusCode, body)
	}
	var list struct {
		Sessions []any `json:"sessions"`
	}
	s.json(s.alice, "GET", "/v1/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("a one-shot execution left sessions: %v", list.Sessions)
	}

	// A timeout is a result, and the sandbox goes too.
	raw, _ := json.Marshal(map[string]any{"code": "import time\nprint('before', flush=True)\ntime.sleep(60)", "timeoutSecs": 1})
	r, b := s.req(s.alice, "POST", "/v1/execute", strings.NewReader(string(raw)))
	if err := json.Unmarshal(b, &res); err != nil || r.StatusCode != 200 || !res.TimedOut || res.Stdout != "before\n" {
		t.Fatalf("timeout: %d %s", r.StatusCode, b)
	}
	s.noOnceSandboxLeft("after a timeout")

	// The Go client streams.
	c := client.New(s.url, s.alice, s.client)
	var live []string
	out, err := c.ExecuteOnce(context.Background(), client.OnceRequest{Code: "print('streamed', flush=True)\n'x'"},
		func(e session.Event) { live = append(live, e.Stdout) })
	if err != nil || out.Stdout != "streamed\n" || !strings.Contains(strings.Join(live, ""), "streamed") {
		t.Fatalf("client: %+v %v (live %q)", out, err, live)
	}
	s.noOnceSandboxLeft("after a streamed call")

	// A client that hangs up mid-execution still has its sandbox killed.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/execute", strings.NewReader(`{"code":"import time\nprint('started', flush=True)\ntime.sleep(120)"}`))
	req.Header.Set("Authorization", "Bearer "+s.alice)
	req.Header.Set("Accept", "application/x-ndjson")
	req.Header.Set("Content-Type", "application/json")
	hung, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	seen := ""
	for !strings.Contains(seen, "started") {
		n, err := hung.Body.Read(buf)
		seen += string(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before the code started: %q %v", seen, err)
		}
	}
	if len(s.onceSandboxes()) != 1 {
		t.Errorf("running one-shot sandboxes: %v", s.onceSandboxes())
	}
	cancel()
	hung.Body.Close()
	s.noOnceSandboxLeft("after the client hung up")
}
