package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/session"
)

type bearerRT struct{ key string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connectMCP(t *testing.T, h *harness, key, query string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: h.srv.URL + "/v1/mcp" + query,
			HTTPClient: &http.Client{Transport: bearerRT{key}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPCallsManagerAsCaller: a tool reaches the Manager as the
// authenticated caller, on the session the request names, or on the one
// named for its MCP session.
func TestMCPCallsManagerAsCaller(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, query, principal, session string
	}{
		{"named", keyAlice, "?session=chat-7", "alice", "chat-7"},
		{"named by another principal", keyBob, "?session=chat-7", "bob", "chat-7"},
		{"unnamed", keyAlice, "", "alice", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			cs := connectMCP(t, h, tc.key, tc.query)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "1+1"}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			got := h.fake.lastKey()
			want := tc.session
			if want == "" {
				want = cs.ID()
				if !strings.HasPrefix(want, "mcp-") {
					t.Fatalf("MCP session id %q", want)
				}
			}
			if got.Tenant != "t1" || got.Principal != tc.principal || got.SessionID != want {
				t.Fatalf("Manager called as %+v, want t1/%s/%s", got, tc.principal, want)
			}
		})
	}
}

// TestMCPToolFailures: the Manager's failures reach the model as error
// results in words it can act on; an unexpected one is logged, never shown.
func TestMCPToolFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		want     string
		hidden   string
		logged   bool
		toolName string
		args     map[string]any
	}{
		{"invalid", session.Errorf(session.ErrInvalid, "code is not valid UTF-8"), "code is not valid UTF-8", "", false,
			"execute_python", map[string]any{"code": "1", "timeoutSecs": 600}},
		{"limit", &session.Error{Kind: session.ErrLimit, Detail: "20 live sandboxes"}, "wait a little", "", false,
			"execute_python", map[string]any{"code": "1"}},
		{"not found", session.Errorf(session.ErrNotFound, "no file a.txt"), "list_files", "", false,
			"read_file", map[string]any{"path": "a.txt"}},
		{"timeout", session.Errorf(session.ErrTimeout, "run code"), "did not finish within its time limit", "run code", false,
			"execute_python", map[string]any{"code": "import time; time.sleep(99)", "timeoutSecs": 1}},
		{"internal", errors.New("dynamodb: secret table arn:aws:xyz"), "could not complete the call", "secret table", true,
			"list_files", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.fake.mu.Lock()
			h.fake.err = tc.err
			h.fake.mu.Unlock()
			cs := connectMCP(t, h, keyAlice, "?session=s1")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.toolName, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.Contains(text, tc.want) || (tc.hidden != "" && strings.Contains(text, tc.hidden)) {
				t.Fatalf("isError %v, text %q", res.IsError, text)
			}
			if logged := strings.Contains(h.logs.String(), "secret table"); logged != tc.logged {
				t.Fatalf("logged %v, want %v: %s", logged, tc.logged, h.logs.String())
			}
		})
	}
}

// TestMCPBadMessages: what the MCP transport refuses is a problem too.
func TestMCPBadMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct {
		name, body, ctype string
		status            int
		detail            string
	}{
		{"not JSON-RPC", `{"hello":1}`, "application/json", 400, ""},
		{"not JSON", `{{{`, "application/json", 400, ""},
		{"no content type", `{}`, "", 415, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.do(call{method: "POST", path: "/v1/mcp", body: tc.body,
				headers: map[string]string{"Content-Type": tc.ctype, "Accept": "application/json, text/event-stream"}})
			p := checkProblem(t, resp, body, tc.status)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("detail %q lacks %q", p.Detail, tc.detail)
			}
		})
	}
}

// TestMCPKeepAlive: a tool call that runs long keeps its event stream alive
// with SSE comments, which the official client ignores.
func TestMCPKeepAlive(t *testing.T) {
	h := newHarness(t)
	srv := h.srv.Config.Handler.(*Server)
	srv.keepAliveFirst, srv.keepAliveEvery = 50*time.Millisecond, 100*time.Millisecond
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, _ func(session.Event)) (*session.ExecResult, error) {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &session.ExecResult{Success: true, Stdout: "slow done\n"}, nil
	}
	t.Run("raw stream", func(t *testing.T) {
		resp, body := h.do(call{method: "POST", path: "/v1/mcp?session=s1",
			body:    `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"slow()"}}}`,
			headers: map[string]string{"Accept": "application/json, text/event-stream"}})
		text := string(body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), text)
		}
		first := strings.Index(text, ": keepalive\n\n")
		result := strings.Index(text, "slow done")
		if first < 0 || result < first || strings.Count(text, ": keepalive") < 2 {
			t.Fatalf("no keepalive before the result:\n%s", text)
		}
	})
	t.Run("official client", func(t *testing.T) {
		cs := connectMCP(t, h, keyAlice, "?session=s1")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "slow()"}})
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "slow done") {
			t.Fatalf("call: %v %+v", err, res)
		}
	})
	t.Run("quick calls send none", func(t *testing.T) {
		resp, body := h.do(call{method: "POST", path: "/v1/mcp?session=s1",
			body:    `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
			headers: map[string]string{"Accept": "application/json, text/event-stream"}})
		if resp.StatusCode != 200 || strings.Contains(string(body), "keepalive") || !strings.Contains(string(body), "execute_python") {
			t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
		}
	})
}

// TestMCPProgress: a client that asks for progress gets the output of a
// running execution as progress notifications, before the result.
func TestMCPProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
		if onEvent == nil {
			return nil, errors.New("no progress callback for a client that asked for progress")
		}
		onEvent(session.Event{Started: true})
		onEvent(session.Event{Stdout: "step 1\n"})
		onEvent(session.Event{Stderr: strings.Repeat("é", 800)})
		return &session.ExecResult{Success: true, Stdout: "step 1\n"}, nil
	}
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.Params)
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.srv.URL + "/v1/mcp?session=s1",
		HTTPClient: &http.Client{Transport: bearerRT{keyAlice}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	params := &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "work()"}}
	params.SetProgressToken("p-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	// The client handles notifications on goroutines of its own.
	_ = testwait.Poll(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) < 2 {
			return fmt.Errorf("%d progress notifications", len(got))
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(got, func(a, b *mcp.ProgressNotificationParams) int { return int(a.Progress - b.Progress) })
	if len(got) != 2 || got[0].ProgressToken != "p-1" || got[0].Message != "step 1\n" || got[1].Progress != 2 ||
		len(got[1].Message) > 1000 || !utf8.ValidString(got[1].Message) {
		t.Fatalf("progress %+v", got)
	}
}

// TestMCPLargeWrite: a write_file of a file near the inline limit, which
// grows by a third in base64, fits one MCP message.
func TestMCPLargeWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cs := connectMCP(t, h, keyAlice, "?session=s1")
	data := bytes.Repeat([]byte{0xfe}, 4_400_000)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file",
		Arguments: map[string]any{"path": "big.bin", "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}})
	if err != nil || res.IsError {
		t.Fatalf("write: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Wrote 4400000 bytes") {
		t.Fatalf("write: %q", text)
	}
}

// TestMCPClientGone: a client that hangs up mid-call cancels the execution
// it started rather than leaving it running for no one.
func TestMCPClientGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	canceled := make(chan struct{})
	h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, _ func(session.Event)) (*session.ExecResult, error) {
		select {
		case <-ctx.Done():
			close(canceled)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return &session.ExecResult{Success: true}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/v1/mcp?session=s1", strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"forever()"}}}`))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the execution kept running after its client hung up")
	}
}
