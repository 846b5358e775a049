package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/mcpserver"
)

// syncBuffer collects log output written from handler goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	t    testing.TB
	srv  *httptest.Server
	fake *fakeManager
	logs *syncBuffer
}

func newHarness(t testing.TB, opts ...Option) *harness {
	t.Helper()
	h := &harness{t: t, fake: newFake(), logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mcpT := WithMCP(mcpserver.NewAPITransport(h.fake, mcpserver.Options{Logger: logger}))
	h.srv = httptest.NewServer(New(h.fake, append([]Option{WithLogger(logger), mcpT}, opts...)...))
	t.Cleanup(h.srv.Close)
	return h
}

// call is one HTTP request of a test. key is the API key sent as a bearer
// token: keyAlice when empty, none when "-".
type call struct {
	method  string
	path    string
	body    string
	headers map[string]string
	key     string
}

func (h *harness) do(c call) (*http.Response, []byte) {
	h.t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, h.srv.URL+c.path, body)
	if err != nil {
		h.t.Fatalf("new request %s %s: %v", c.method, c.path, err)
	}
	if c.body != "" && c.method != http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	switch c.key {
	case "":
		req.Header.Set("Authorization", "Bearer "+keyAlice)
	case "-":
	default:
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for k, v := range c.headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read %s %s: %v", c.method, c.path, err)
	}
	return resp, b
}

// checkProblem asserts a response is a well-formed problem of the given
// status and returns it.
func checkProblem(t *testing.T, resp *http.Response, body []byte, status int) Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentTypeProblem {
		t.Fatalf("Content-Type %q, want %q", ct, contentTypeProblem)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("problem is not JSON: %v: %s", err, body)
	}
	for _, f := range []string{"type", "title", "status", "detail"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("problem lacks %q: %s", f, body)
		}
	}
	var p Problem
	_ = json.Unmarshal(body, &p)
	if !strings.HasPrefix(p.Type, problemBase) || p.Status != status || p.Title == "" || p.Detail == "" {
		t.Fatalf("bad problem %s", body)
	}
	if p.RequestID == "" || p.RequestID != resp.Header.Get("X-Request-Id") {
		t.Fatalf("problem requestId %q, header %q", p.RequestID, resp.Header.Get("X-Request-Id"))
	}
	return p
}

// validCalls holds one well-formed request per authenticated route, with
// the Manager method it must reach and the status it must get.
var validCalls = []struct {
	call   call
	method string
	status int
}{
	{call{method: "GET", path: "/v1/sessions?limit=5&cursor=abc"}, "List", 200},
	{call{method: "POST", path: "/v1/sessions/s1/checkpoint"}, "Checkpoint", 200},
	{call{method: "DELETE", path: "/v1/sessions/s1"}, "Delete", 204},
	{call{method: "POST", path: "/v1/sessions/s1/sandbox/start", body: `{"type":"code_interpreter","envs":{"A":"1"},"metadata":{"k":"v"},"idleTimeoutSecs":60,"pause":true}`}, "Start", 200},
	{call{method: "POST", path: "/v1/sessions/s1/sandbox/stop"}, "Stop", 200},
	{call{method: "GET", path: "/v1/sessions/s1/sandbox"}, "Status", 200},
	{call{method: "GET", path: "/v1/sessions/s1/sandbox/metrics"}, "Metrics", 200},
	{call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1+1","timeoutSecs":10,"envs":{"X":"y"},"context":"c1"}`}, "Execute", 200},
	{call{method: "POST", path: "/v1/sessions/s1/reset"}, "Reset", 204},
	{call{method: "POST", path: "/v1/sessions/s1/contexts", body: `{"language":"python","cwd":"work"}`}, "CreateContext", 201},
	{call{method: "GET", path: "/v1/sessions/s1/contexts"}, "ListContexts", 200},
	{call{method: "DELETE", path: "/v1/sessions/s1/contexts/ctx-1"}, "DeleteContext", 204},
	{call{method: "POST", path: "/v1/sessions/s1/contexts/ctx-1/reset"}, "ResetContext", 204},
	{call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["tinylib==1.0","pandas[excel]>=2"],"indexUrl":"http://127.0.0.1:9/simple"}`}, "Install", 200},
	{call{method: "GET", path: "/v1/sessions/s1/files?path=/home/user&depth=2"}, "ListFiles", 200},
	{call{method: "DELETE", path: "/v1/sessions/s1/files?path=a.txt"}, "DeleteFile", 204},
	{call{method: "GET", path: "/v1/sessions/s1/files/content?path=a.txt"}, "ReadFile", 200},
	{call{method: "PUT", path: "/v1/sessions/s1/files/content?path=a.txt", body: "hello"}, "WriteFile", 200},
	{call{method: "POST", path: "/v1/sessions/s1/files/upload-url", body: `{"path":"big.bin","sizeBytes":25165824,"contentType":"application/octet-stream"}`}, "UploadURL", 200},
	{call{method: "POST", path: "/v1/sessions/s1/files/import", body: `{"transferId":"0123456789abcdef0123456789abcdef0123456789abcdef"}`}, "Import", 200},
	{call{method: "POST", path: "/v1/sessions/s1/files/download-url", body: `{"path":"big.bin"}`}, "DownloadURL", 200},
	{call{method: "POST", path: "/v1/sessions/s1/files/upload-urls", body: `{"urls":["https://cdn.example.com/a.csv","https://cdn.example.com/b.csv"],"destDir":"data"}`}, "UploadURLs", 200},
	{call{method: "POST", path: "/v1/sessions/s1/commands", body: `{"cmd":"ls","cwd":"data","envs":{"A":"b"},"timeoutSecs":5,"user":"user"}`}, "RunCommand", 200},
	{call{method: "POST", path: "/v1/sessions/s1/commands", body: `{"cmd":"sleep 60","background":true}`}, "StartCommand", 202},
	{call{method: "GET", path: "/v1/sessions/s1/commands"}, "ListCommands", 200},
	{call{method: "GET", path: "/v1/sessions/s1/commands/" + fakeCommandID}, "CommandStatus", 200},
	{call{method: "POST", path: "/v1/sessions/s1/commands/" + fakeCommandID + "/kill"}, "KillCommand", 204},
	{call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"code":"42"}`, headers: map[string]string{"Idempotency-Key": "k-1"}}, "SubmitRun", 202},
	{call{method: "GET", path: "/v1/runs/run1"}, "GetRun", 200},
	{call{method: "GET", path: "/v1/runs/" + fakeLargeRun}, "RunResultURL", 200},
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
