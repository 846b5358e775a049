package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func (f *fakeManager) ExecuteOnce(ctx context.Context, tenant, principal string, req session.OnceRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	if err := f.record("ExecuteOnce", session.Key{Tenant: tenant, Principal: principal}); err != nil {
		return nil, err
	}
	if onEvent != nil {
		onEvent(session.Event{Started: true})
		onEvent(session.Event{Stdout: "hi\n"})
	}
	res := fakeResult()
	res.DurationMs = int64(req.TimeoutSecs)
	return res, nil
}

// TestExecuteOnceRoute: POST /v1/execute reaches the Manager with the
// caller's identity and answers the result in JSON and NDJSON; bad bodies
// are refused by name before it.
func TestExecuteOnceRoute(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	resp, body := h.do(call{method: "POST", path: "/v1/execute", body: `{"code":"1+1","timeoutSecs":7,"template":"base","envs":{"A":"b"}}`})
	var res session.ExecResult
	if resp.StatusCode != 200 || json.Unmarshal(body, &res) != nil || res.Stdout != "hi\n" || res.DurationMs != 7 || len(res.Artifacts) != 1 {
		t.Fatalf("json: %d %s", resp.StatusCode, body)
	}
	if k := h.fake.keys[len(h.fake.keys)-1]; k.Tenant != "t1" || k.Principal != "alice" {
		t.Errorf("identity %+v", k)
	}
	for _, stream := range []call{
		{method: "POST", path: "/v1/execute/stream", body: `{"code":"1"}`},
		{method: "POST", path: "/v1/execute", body: `{"code":"1"}`, headers: map[string]string{"Accept": "application/x-ndjson"}},
	} {
		resp, body = h.do(stream)
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if resp.StatusCode != 200 || len(lines) != 4 || lines[0] != `{"type":"start"}` || !strings.HasPrefix(lines[2], `{"type":"result"`) ||
			!strings.HasPrefix(lines[3], `{"type":"done","summary":{`) {
			t.Fatalf("%s ndjson: %d %q", stream.path, resp.StatusCode, lines)
		}
	}
	bad := []struct {
		name, body, detail string
		status             int
	}{
		{"no code", `{}`, `"code" is required`, 400},
		{"unknown field", `{"code":"1","context":"c"}`, "context", 400},
		{"not json", `code`, "JSON", 400},
	}
	for _, b := range bad {
		resp, body := h.do(call{method: "POST", path: "/v1/execute", body: b.body})
		if p := checkProblem(t, resp, body, b.status); !strings.Contains(p.Detail, b.detail) {
			t.Errorf("%s: detail %q, want it to name %q", b.name, p.Detail, b.detail)
		}
	}
	resp, body = h.do(call{method: "POST", path: "/v1/execute", body: `{"code":"1"}`, key: "-"})
	checkProblem(t, resp, body, http.StatusUnauthorized)
}
