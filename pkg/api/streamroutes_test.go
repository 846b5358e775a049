package api

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// streamLines reads a whole stream, each line held to the document.
func streamLines(t *testing.T, h *harness, path, body, accept string) []map[string]any {
	t.Helper()
	resp := h.open(path, body, accept)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != contentTypeNDJSON {
		t.Fatalf("%s: status %d, Content-Type %q: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), readAll(t, resp))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var out []map[string]any
	for {
		l := nextLine(t, sc)
		out = append(out, l)
		if l["type"] == "done" || l["type"] == "failure" {
			break
		}
	}
	if sc.Scan() {
		t.Fatalf("line after the last: %s", sc.Text())
	}
	return out
}

// TestStreamRoutes checks the streaming operations answer NDJSON whatever
// JSON-friendly Accept they get, and the older Accept form of the JSON
// routes answers the same lines.
func TestStreamRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		onEvent(session.Event{Stdout: "hi\n"})
		return &session.ExecResult{Success: true, Stdout: "hi\n", DurationMs: 3}, nil
	}
	h.fake.install = func(_ context.Context, _ session.Key, _ session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error) {
		onEvent(session.Event{Stdout: "ok\n"})
		return &session.InstallResult{Success: true, Stdout: "ok\n"}, nil
	}
	cases := []struct{ path, body, accept string }{
		{"/v1/sessions/s1/execute/stream", `{"code":"print('hi')"}`, ""},
		{"/v1/sessions/s1/execute/stream", `{"code":"print('hi')"}`, "*/*"},
		{"/v1/sessions/s1/execute/stream", `{"code":"print('hi')"}`, contentTypeNDJSON},
		{"/v1/sessions/s1/execute", `{"code":"print('hi')"}`, contentTypeNDJSON},
		{"/v1/execute/stream", `{"code":"print('hi')"}`, ""},
		{"/v1/execute", `{"code":"print('hi')"}`, contentTypeNDJSON},
		{"/v1/sessions/s1/install/stream", `{"packages":["tinylib"]}`, "application/x-ndjson, application/problem+json"},
		{"/v1/sessions/s1/install", `{"packages":["tinylib"]}`, contentTypeNDJSON},
	}
	for _, tc := range cases {
		lines := streamLines(t, h, tc.path, tc.body, tc.accept)
		if lines[0]["type"] == "start" { // the one-shot fake says it started
			lines = lines[1:]
		}
		first, last := lines[0], lines[len(lines)-1]
		summary, _ := last["summary"].(map[string]any)
		if first["type"] != "stdout" || last["type"] != "done" || summary["success"] != true || summary["stdout"] != nil {
			t.Errorf("%s (Accept %q): lines %v", tc.path, tc.accept, lines)
		}
	}
}

// TestStreamRoutesRefuseJSONOnly answers 406 to a client of a streaming
// route that takes only JSON: it would get lines it cannot parse.
func TestStreamRoutesRefuseJSONOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, path := range []string{"/v1/sessions/s1/execute/stream", "/v1/sessions/s1/install/stream", "/v1/execute/stream"} {
		resp, body := h.do(call{method: "POST", path: path, body: `{"code":"1","packages":["x"]}`,
			headers: map[string]string{"Accept": "application/json"}})
		if p := checkProblem(t, resp, body, 406); !strings.Contains(p.Detail, contentTypeNDJSON) {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
	if n := len(h.fake.keys); n != 0 {
		t.Fatalf("the Manager was called %d times", n)
	}
}

// TestStreamSendsWhatLinesLacked gives the stream a result holding output
// its events never carried (a provider that reports output only at the
// end): the missing parts go out as lines before done, so joining the
// lines always gives the whole result, and nothing is sent twice.
func TestStreamSendsWhatLinesLacked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	png := strings.Repeat("iVBOR", 1000)
	h.fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		onEvent(session.Event{Stdout: "one\n"})
		onEvent(session.Event{Result: &session.Result{PNG: png}})
		return &session.ExecResult{
			Stdout: "one\ntwo\n", Stderr: "warn\n", DurationMs: 9, ExecutionCount: 4, Truncated: true,
			Results: []session.Result{{PNG: png}, {Text: "42", IsMainResult: true}},
			Error:   &session.ExecError{Name: "TimeoutError", Value: "past 1 s", Traceback: ""}, TimedOut: true,
		}, nil
	}
	lines := streamLines(t, h, "/v1/sessions/s1/execute/stream", `{"code":"x"}`, "")
	var got []string
	for _, l := range lines {
		b, _ := json.Marshal(l)
		got = append(got, string(b))
	}
	want := []string{
		`{"text":"one\n","type":"stdout"}`,
		`{"result":{"isMainResult":false,"png":"` + png + `"},"type":"result"}`,
		`{"text":"two\n","type":"stdout"}`,
		`{"text":"warn\n","type":"stderr"}`,
		`{"result":{"isMainResult":true,"text":"42"},"type":"result"}`,
		`{"error":{"name":"TimeoutError","traceback":"","value":"past 1 s"},"type":"error"}`,
		`{"summary":{"durationMs":9,"executionCount":4,"kernelRestarted":false,"restarted":false,"success":false,"timedOut":true,"truncated":true},"type":"done"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
