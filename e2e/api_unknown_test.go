package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// creatingRoutes are the routes that create a session on first use: they
// put work or data in it.
var creatingRoutes = map[string]bool{
	"POST /v1/sessions/{id}/sandbox/start":     true,
	"POST /v1/sessions/{id}/execute":           true,
	"POST /v1/sessions/{id}/execute/stream":    true,
	"POST /v1/sessions/{id}/install":           true,
	"POST /v1/sessions/{id}/install/stream":    true,
	"POST /v1/sessions/{id}/runs":              true,
	"PUT /v1/sessions/{id}/files/content":      true,
	"POST /v1/sessions/{id}/files/upload-url":  true,
	"POST /v1/sessions/{id}/files/import":      true,
	"POST /v1/sessions/{id}/files/upload-urls": true,
	"POST /v1/sessions/{id}/contexts":          true,
	"POST /v1/sessions/{id}/commands":          true,
}

// unknownSessionCalls are the other session routes, each with a valid
// request but for the session.
var unknownSessionCalls = map[string]struct{ query, body string }{
	"GET /v1/sessions/{id}/sandbox":                     {},
	"POST /v1/sessions/{id}/sandbox/stop":               {},
	"POST /v1/sessions/{id}/reset":                      {},
	"GET /v1/sessions/{id}/files":                       {query: "?path=."},
	"DELETE /v1/sessions/{id}/files":                    {query: "?path=a.txt"},
	"GET /v1/sessions/{id}/files/content":               {query: "?path=a.txt"},
	"POST /v1/sessions/{id}/files/download-url":         {body: `{"path":"a.txt"}`},
	"POST /v1/sessions/{id}/checkpoint":                 {},
	"DELETE /v1/sessions/{id}":                          {},
	"GET /v1/sessions/{id}/contexts":                    {},
	"GET /v1/sessions/{id}/sandbox/metrics":             {},
	"DELETE /v1/sessions/{id}/contexts/{contextId}":     {},
	"POST /v1/sessions/{id}/contexts/{contextId}/reset": {},
	"GET /v1/sessions/{id}/commands":                    {},
	"GET /v1/sessions/{id}/commands/{commandId}":        {},
	"GET /v1/sessions/{id}/commands/{commandId}/output": {},
	"POST /v1/sessions/{id}/commands/{commandId}/kill":  {},
}

// sampleCommandID is a well-formed command id for routes that take one.
const sampleCommandID = "cmd-0123abcd-mhx2k1c0-00ff00ff"

// TestEndToEndUnknownSessions holds every session route of the OpenAPI
// document to one rule: a route that does not put work or data in a
// session answers 404 naming an unknown session and creates nothing.
func TestEndToEndUnknownSessions(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	s.json("", "GET", "/v1/openapi.json", nil, &doc)
	const sid = "never-used"
	for path, ops := range doc.Paths {
		if !strings.Contains(path, "{id}") {
			continue
		}
		for method := range ops {
			route := strings.ToUpper(method) + " " + path
			if creatingRoutes[route] {
				continue
			}
			c, ok := unknownSessionCalls[route]
			if !ok {
				t.Errorf("%s: a session route this test does not know; decide whether it creates a session and add it to one of the tables", route)
				continue
			}
			var body *strings.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			target := strings.NewReplacer("{id}", sid, "{contextId}", "ctx-1", "{commandId}", sampleCommandID).Replace(path) + c.query
			var resp *http.Response
			var raw []byte
			if body != nil {
				resp, raw = s.req(s.alice, strings.ToUpper(method), target, body, "Content-Type", "application/json")
			} else {
				resp, raw = s.req(s.alice, strings.ToUpper(method), target, nil)
			}
			p := s.problem(http.StatusNotFound, resp, raw)
			if want := `session "never-used" not found`; p["detail"] != want {
				t.Errorf("%s: detail %q, want %q", route, p["detail"], want)
			}
		}
	}
	var list struct {
		Sessions []any `json:"sessions"`
	}
	s.json(s.alice, "GET", "/v1/sessions", nil, &list)
	if len(list.Sessions) != 0 || len(s.sessionSandboxes("alice", sid)) != 0 {
		t.Errorf("calls on an unknown session created %v, sandboxes %v", list.Sessions, s.sessionSandboxes("alice", sid))
	}

	// A session that exists without a sandbox: stop and reset have nothing
	// to do, and neither starts one.
	const stopped = "stopped-one"
	s.exec(s.alice, stopped, "1")
	s.json(s.alice, "POST", "/v1/sessions/"+stopped+"/sandbox/stop", nil, nil)
	if resp, body := s.req(s.alice, "POST", "/v1/sessions/"+stopped+"/reset", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("reset of a stopped session: %d %s", resp.StatusCode, body)
	}
	if resp, body := s.req(s.alice, "POST", "/v1/sessions/"+stopped+"/sandbox/stop", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("stop of a stopped session: %d %s", resp.StatusCode, body)
	}
	if ids := s.sessionSandboxes("alice", stopped); len(ids) != 0 {
		t.Errorf("reset or stop started a sandbox: %v", ids)
	}
}
