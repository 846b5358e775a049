package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestSessionViewShowsWorkspace: a session's view carries its last
// checkpoint, the reason one failed, persist only when off, and what a
// start restored.
func TestSessionViewShowsWorkspace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fake.start = func(ctx context.Context, key session.Key, opts session.StartOptions) (*session.Session, error) {
		s := fakeSession(key)
		s.NoPersist = opts.Persist != nil && !*opts.Persist
		s.LastCheckpoint = session.CheckpointInfo{At: fakeNow, Files: 2, Bytes: 10}
		s.CheckpointProblem = "past the cap"
		s.Restored = &session.RestoreInfo{Files: 2, Bytes: 10, CheckpointAt: fakeNow}
		return s, nil
	}
	cases := []struct {
		body        string
		wantPersist any
	}{
		{`{}`, nil},
		{`{"persist":true}`, nil},
		{`{"persist":false}`, false},
	}
	for _, tc := range cases {
		resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/sandbox/start", body: tc.body})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		if v["persist"] != tc.wantPersist {
			t.Fatalf("%s: persist %v, want %v", tc.body, v["persist"], tc.wantPersist)
		}
		lc, _ := v["lastCheckpoint"].(map[string]any)
		rs, _ := v["restored"].(map[string]any)
		if lc["files"] != 2.0 || lc["at"] != "2026-01-02T03:04:05Z" || v["checkpointProblem"] != "past the cap" ||
			rs["files"] != 2.0 || rs["checkpointAt"] != "2026-01-02T03:04:05Z" {
			t.Fatalf("%s: %s", tc.body, body)
		}
	}
}

// TestWorkspaceRouteErrors: the Manager's refusals keep their status.
func TestWorkspaceRouteErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		call   call
		err    error
		status int
	}{
		{call{method: "POST", path: "/v1/sessions/s1/checkpoint"}, session.Errorf(session.ErrConflict, "persist is off"), 409},
		{call{method: "POST", path: "/v1/sessions/s1/checkpoint"}, session.Errorf(session.ErrLimit, "past the size cap"), 429},
		{call{method: "POST", path: "/v1/sessions/s1/checkpoint"}, session.Errorf(session.ErrNotFound, "no sandbox"), 404},
		{call{method: "DELETE", path: "/v1/sessions/s1"}, session.Errorf(session.ErrNotFound, "no session"), 404},
		{call{method: "POST", path: "/v1/sessions/s1/checkpoint", body: `{"x":1}`}, nil, 400},
		{call{method: "DELETE", path: "/v1/sessions/" + "a%20b"}, nil, 400},
	}
	for _, tc := range cases {
		h := newHarness(t)
		h.fake.err = tc.err
		resp, body := h.do(tc.call)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("%s %s with %v: %d %s", tc.call.method, tc.call.path, tc.err, resp.StatusCode, body)
		}
	}
}
