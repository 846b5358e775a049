package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
		{"invalid", session.Errorf(session.ErrInvalid, "timeoutSecs must be between 0 and 900"), "timeoutSecs must be between 0 and 900", "", false,
			"execute_python", map[string]any{"code": "1", "timeoutSecs": 5000}},
		{"limit", &session.Error{Kind: session.ErrLimit, Detail: "20 live sandboxes"}, "wait a little", "", false,
			"execute_python", map[string]any{"code": "1"}},
		{"not found", session.Errorf(session.ErrNotFound, "no file a.txt"), "list_files", "", false,
			"read_file", map[string]any{"path": "a.txt"}},
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
