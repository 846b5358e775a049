package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// openStream posts to a streaming route and returns the live response.
func (h *harness) openStream(path, body string) *http.Response {
	h.t.Helper()
	return h.open(path, body, contentTypeNDJSON)
}

// open posts body to path accepting accept and returns the live response,
// closed when the test ends.
func (h *harness) open(path, body, accept string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// nextLine reads one line of a stream and holds it to the OpenAPI
// document's stream lines (an execute's or an install's), so every kind of
// line a test sees (keepalives included) is documented.
func nextLine(t *testing.T, sc *bufio.Scanner) map[string]any {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("stream ended early: %v", sc.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
		t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
	}
	c := schemaChecker{doc: loadDoc(t)}
	execErr := c.check(map[string]any{"$ref": "#/components/schemas/ExecuteStreamLine"}, any(m), "stream line")
	installErr := c.check(map[string]any{"$ref": "#/components/schemas/InstallStreamLine"}, any(m), "stream line")
	if execErr != nil && installErr != nil {
		t.Fatalf("line %s is not a documented stream line: %v; %v", sc.Text(), execErr, installErr)
	}
	return m
}

// TestExecuteStreamsLive checks each event reaches the client while the
// execution is still running: the fake blocks after each event until the
// test has read the corresponding line.
func TestExecuteStreamsLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	read := make(chan struct{})
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		events := []session.Event{
			{Stdout: "one\n"}, {Stderr: "warn\n"},
			{Result: &session.Result{PNG: "iVBOR", IsMainResult: false}},
			{Error: &session.ExecError{Name: "ValueError", Value: "bad", Traceback: "tb"}},
		}
		for _, ev := range events {
			onEvent(ev)
			select {
			case <-read:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return nil, session.Errorf(session.ErrTimeout, "the client never read the line: not flushed")
			}
		}
		return &session.ExecResult{Stdout: "one\n", Stderr: "warn\n", Error: events[3].Error}, nil
	}
	resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"print('one')"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	want := []string{
		`{"type":"stdout","text":"one\n"}`,
		`{"type":"stderr","text":"warn\n"}`,
		`{"type":"result","result":{"png":"iVBOR","isMainResult":false}}`,
		`{"type":"error","error":{"name":"ValueError","value":"bad","traceback":"tb"}}`,
	}
	for _, w := range want {
		if !sc.Scan() {
			t.Fatalf("stream ended before %s: %v", w, sc.Err())
		}
		if sc.Text() != w {
			t.Fatalf("line %s, want %s", sc.Text(), w)
		}
		read <- struct{}{}
	}
	// The done line is the summary: the output went out already.
	done := nextLine(t, sc)
	summary, _ := done["summary"].(map[string]any)
	if done["type"] != "done" || summary["success"] != false || len(done) != 2 {
		t.Fatalf("last line %v", done)
	}
	for _, streamed := range []string{"stdout", "stderr", "results", "error"} {
		if _, ok := summary[streamed]; ok {
			t.Errorf("the done line repeats %s: %v", streamed, summary)
		}
	}
	if sc.Scan() {
		t.Fatalf("line after done: %s", sc.Text())
	}
}

func TestStreamErrors(t *testing.T) {
	t.Parallel()
	t.Run("after streaming began", func(t *testing.T) {
		h := newHarness(t)
		h.fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
			onEvent(session.Event{Stdout: "partial"})
			return nil, session.Errorf(session.ErrSandboxGone, "the sandbox died")
		}
		resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"x"}`)
		sc := bufio.NewScanner(resp.Body)
		if l := nextLine(t, sc); l["type"] != "stdout" {
			t.Fatalf("first line %v", l)
		}
		last := nextLine(t, sc)
		p, _ := last["problem"].(map[string]any)
		if last["type"] != "failure" || p["type"] != problemBase+"unavailable" || p["status"] != float64(502) ||
			p["detail"] != "the sandbox died" || p["requestId"] != resp.Header.Get("X-Request-Id") {
			t.Fatalf("last line %v", last)
		}
		if sc.Scan() {
			t.Fatalf("line after the error: %s", sc.Text())
		}
	})
	t.Run("before streaming began", func(t *testing.T) {
		h := newHarness(t)
		h.fake.execute = func(context.Context, session.Key, session.ExecRequest, func(session.Event)) (*session.ExecResult, error) {
			return nil, &session.Error{Kind: session.ErrLimit, Detail: "too many sandboxes", RetryAfter: 30 * time.Second}
		}
		resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"x"}`)
		body := readAll(t, resp)
		checkProblem(t, resp, body, 429)
		if resp.Header.Get("Retry-After") != "30" {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
	})
	t.Run("late events are dropped", func(t *testing.T) {
		h := newHarness(t)
		late := make(chan func(session.Event), 1)
		h.fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
			onEvent(session.Event{Stdout: "a"})
			late <- onEvent
			return &session.ExecResult{Stdout: "a"}, nil
		}
		resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"x"}`)
		body := readAll(t, resp)
		// An event after Execute returned must neither panic nor write.
		(<-late)(session.Event{Stdout: "too late"})
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], `"type":"done"`) {
			t.Fatalf("lines %q", lines)
		}
	})
}

func TestInstallStreams(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var got session.InstallRequest
	h.fake.install = func(_ context.Context, _ session.Key, req session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error) {
		got = req
		onEvent(session.Event{Stdout: "Collecting tinylib\n"})
		return &session.InstallResult{Success: true, Stdout: "Collecting tinylib\n", DurationMs: 5}, nil
	}
	resp := h.openStream("/v1/sessions/s1/install/stream", `{"packages":["tinylib==1.0"],"indexUrl":"http://127.0.0.1:1/simple"}`)
	body := string(readAll(t, resp))
	want := `{"type":"stdout","text":"Collecting tinylib\n"}` + "\n" +
		`{"type":"done","summary":{"success":true,"exitCode":0,"durationMs":5,"truncated":false,"restarted":false}}` + "\n"
	if body != want {
		t.Fatalf("stream\n%s\nwant\n%s", body, want)
	}
	if len(got.Packages) != 1 || got.Packages[0] != "tinylib==1.0" || got.IndexURL != "http://127.0.0.1:1/simple" {
		t.Fatalf("manager got %+v", got)
	}
}

func TestAcceptNegotiation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		accept string
		stream bool
	}{
		{"", false},
		{"application/json", false},
		{"*/*", false},
		{"application/x-ndjson", true},
		{"application/json;q=0.5, application/x-ndjson", true},
		{"application/x-ndjson;q=0", false},
	}
	for _, tc := range cases {
		r, _ := http.NewRequest("POST", "/", nil)
		r.Header.Set("Accept", tc.accept)
		if got := wantsNDJSON(r); got != tc.stream {
			t.Errorf("Accept %q: stream %v, want %v", tc.accept, got, tc.stream)
		}
	}
}

// TestLongExecuteOutlivesWriteTimeout runs the API on a server whose write
// timeout is shorter than the execution: the answer must still arrive.
func TestLongExecuteOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	fake := newFake()
	fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &session.ExecResult{Success: true, Stdout: "slow\n"}, nil
	}
	srv := httptest.NewUnstartedServer(New(fake))
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	for _, accept := range []string{"application/json", contentTypeNDJSON} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions/s1/execute", strings.NewReader(`{"code":"slow()"}`))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Accept", accept)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", accept, err)
		}
		body := readAll(t, resp)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "slow") {
			t.Fatalf("%s: status %d body %s", accept, resp.StatusCode, body)
		}
	}
}

// TestStreamKeepAlive checks a silent call keeps its stream alive, while a
// call that fails at once still gets a plain problem.
func TestStreamKeepAlive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.srv.Config.Handler.(*Server)
	srv.keepAliveFirst, srv.keepAliveEvery = 50*time.Millisecond, 100*time.Millisecond
	release := make(chan struct{})
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		onEvent(session.Event{Started: true})
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &session.ExecResult{Success: true}, nil
	}
	resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"slow()"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	if l := nextLine(t, sc); l["type"] != "start" {
		t.Fatalf("first line %v, want start", l)
	}
	for range 3 {
		if l := nextLine(t, sc); l["type"] != "keepalive" || len(l) != 1 {
			t.Fatalf("line %v, want a keepalive", l)
		}
	}
	close(release)
	// One more keepalive may have gone out before the result was ready.
	l := nextLine(t, sc)
	for l["type"] == "keepalive" {
		l = nextLine(t, sc)
	}
	if l["type"] != "done" {
		t.Fatalf("last line %v", l)
	}
	if sc.Scan() {
		t.Fatalf("line after done: %s", sc.Text())
	}

	h.fake.execute = func(context.Context, session.Key, session.ExecRequest, func(session.Event)) (*session.ExecResult, error) {
		return nil, session.Errorf(session.ErrNotFound, "no such context")
	}
	resp = h.openStream("/v1/sessions/s1/execute/stream", `{"code":"x"}`)
	checkProblem(t, resp, readAll(t, resp), 404)
}

// TestClientHangsUpMidStream cancels the Manager's call when the client
// goes away, and logs it as the client's doing rather than a failure.
func TestClientHangsUpMidStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	canceled := make(chan struct{})
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		onEvent(session.Event{Stdout: "started\n"})
		select {
		case <-ctx.Done():
			close(canceled)
			return nil, session.Errorf(session.ErrTimeout, "execution interrupted")
		case <-time.After(10 * time.Second):
			return nil, session.Errorf(session.ErrTimeout, "the request context was never canceled")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/v1/sessions/s1/execute", strings.NewReader(`{"code":"loop()"}`))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Accept", contentTypeNDJSON)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	if l := nextLine(t, sc); l["type"] != "stdout" {
		t.Fatalf("first line %v", l)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the Manager's context was not canceled")
	}
	// The access log line comes when the handler returns.
	testwait.Until(t, 5*time.Second, func() error {
		if !strings.Contains(h.logs.String(), `"route":"POST /v1/sessions/{id}/execute"`) {
			return fmt.Errorf("no access log: %s", h.logs.String())
		}
		return nil
	})
	logs := h.logs.String()
	if !strings.Contains(logs, "client went away") || strings.Contains(logs, `"level":"ERROR"`) {
		t.Fatalf("logs %s", logs)
	}
}

// TestStreamStartLine checks the response starts when the Manager says the
// call reached its sandbox, before any output, and only once; a call moved
// to a fresh sandbox may say so twice.
func TestStreamStartLine(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	read := make(chan struct{})
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		onEvent(session.Event{Started: true})
		onEvent(session.Event{Started: true})
		select {
		case <-read:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		onEvent(session.Event{Stdout: "after\n"})
		return &session.ExecResult{Success: true, Stdout: "after\n"}, nil
	}
	resp := h.openStream("/v1/sessions/s1/execute/stream", `{"code":"print('after')"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	if l := nextLine(t, sc); l["type"] != "start" || len(l) != 1 {
		t.Fatalf("first line %v, want the start line alone", l)
	}
	close(read)
	if l := nextLine(t, sc); l["type"] != "stdout" || l["text"] != "after\n" {
		t.Fatalf("second line %v, want the output", l)
	}
	if l := nextLine(t, sc); l["type"] != "done" {
		t.Fatalf("last line %v", l)
	}
}
