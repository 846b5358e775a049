package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func (h *harness) openJSON(path, body string) *http.Response {
	h.t.Helper()
	return h.open(path, body, "application/json")
}

// TestJSONModeKeepAlive: a JSON-mode execute that runs long gets its status
// and headers while it runs and whitespace while it is silent, so a gateway
// does not cut it; the body stays one JSON value. A failure after the start
// is the body's Problem; one before it keeps its own status.
func TestJSONModeKeepAlive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := h.srv.Config.Handler.(*Server)
	srv.keepAliveFirst, srv.keepAliveEvery = 50*time.Millisecond, 100*time.Millisecond
	for _, c := range []struct {
		name string
		err  error
	}{
		{"succeeds", nil},
		{"fails after the start", session.Errorf(session.ErrUnavailable, "sandbox went away")},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
				onEvent(session.Event{Started: true})
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if c.err != nil {
					return nil, c.err
				}
				return &session.ExecResult{Success: true, Stdout: "slow\n"}, nil
			}
			// The status arrives while the call still runs.
			resp := h.openJSON("/v1/sessions/s1/execute", `{"code":"slow()"}`)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			for range 3 {
				if b, err := br.ReadByte(); err != nil || b != ' ' {
					t.Fatalf("read %q %v, want a space", b, err)
				}
			}
			close(release)
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal(rest, &v); err != nil {
				t.Fatalf("body is not one JSON value: %v: %q", err, rest)
			}
			if c.err == nil && (v["success"] != true || v["stdout"] != "slow\n") {
				t.Fatalf("result %v", v)
			}
			if typ, _ := v["type"].(string); c.err != nil && (v["status"] != 502.0 || !strings.HasPrefix(typ, "https://sessionbox.dev/problems/")) {
				t.Fatalf("problem %v", v)
			}
		})
	}
	h.fake.execute = func(context.Context, session.Key, session.ExecRequest, func(session.Event)) (*session.ExecResult, error) {
		return nil, session.Errorf(session.ErrNotFound, "no such context")
	}
	resp := h.openJSON("/v1/sessions/s1/execute", `{"code":"x"}`)
	checkProblem(t, resp, readAll(t, resp), 404)
}
