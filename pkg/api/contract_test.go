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

// docBodySchema is the schema the document gives an operation's response
// of status and media type, or nil when it lists none.
func docBodySchema(c schemaChecker, doc map[string]any, method, route, status, media string) map[string]any {
	resp, ok := docOperation(doc, method, route)["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		return nil
	}
	content, _ := c.resolve(resp)["content"].(map[string]any)
	m, ok := content[media].(map[string]any)
	if !ok {
		return nil
	}
	s, _ := m["schema"].(map[string]any)
	return s
}

// TestLateBodiesMatchDocument: a JSON-mode call answered 200 early ends
// with its result or, when it fails after the start, a Problem; the
// document's 200 schema must take both.
func TestLateBodiesMatchDocument(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	c := schemaChecker{doc: doc}
	late := session.Errorf(session.ErrUnavailable, "sandbox went away")
	for _, tc := range []struct {
		route, path, body string
		err               error
	}{
		{"/v1/sessions/{id}/execute", "/v1/sessions/s1/execute", `{"code":"slow()"}`, nil},
		{"/v1/sessions/{id}/execute", "/v1/sessions/s1/execute", `{"code":"slow()"}`, late},
		{"/v1/sessions/{id}/install", "/v1/sessions/s1/install", `{"packages":["a"]}`, nil},
		{"/v1/sessions/{id}/install", "/v1/sessions/s1/install", `{"packages":["a"]}`, late},
	} {
		t.Run(tc.path+" "+errString(tc.err), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			srv := h.srv.Config.Handler.(*Server)
			srv.keepAliveFirst, srv.keepAliveEvery = time.Millisecond, 10*time.Millisecond
			// The call ends only once the 200 has been sent.
			started := make(chan struct{})
			wait := func(ctx context.Context) error {
				select {
				case <-started:
					return tc.err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			h.fake.execute = func(ctx context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
				onEvent(session.Event{Started: true})
				if err := wait(ctx); err != nil {
					return nil, err
				}
				return &session.ExecResult{Success: true, Stdout: "slow\n", Results: []session.Result{}}, nil
			}
			h.fake.install = func(ctx context.Context, _ session.Key, _ session.InstallRequest, onEvent func(session.Event)) (*session.InstallResult, error) {
				onEvent(session.Event{Started: true})
				if err := wait(ctx); err != nil {
					return nil, err
				}
				return &session.InstallResult{Success: true}, nil
			}
			resp := h.openJSON(tc.path, tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			close(started)
			var v any
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
			if _, problem := v.(map[string]any)["type"]; problem != (tc.err != nil) {
				t.Fatalf("body %v", v)
			}
			schema := docBodySchema(c, doc, "POST", tc.route, "200", "application/json")
			if err := c.check(schema, v, tc.path+" 200"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "result"
	}
	return "late problem"
}

// TestAcceptNDJSONMatchesDocument: execute, install and /v1/execute answer
// NDJSON when Accept asks for it; the document lists that media type on
// their 200 and every line matches its schema.
func TestAcceptNDJSONMatchesDocument(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	c := schemaChecker{doc: doc}
	for _, tc := range []struct{ route, path, body string }{
		{"/v1/sessions/{id}/execute", "/v1/sessions/s1/execute", `{"code":"print(1)"}`},
		{"/v1/sessions/{id}/install", "/v1/sessions/s1/install", `{"packages":["a"]}`},
		{"/v1/execute", "/v1/execute", `{"code":"print(1)"}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			schema := docBodySchema(c, doc, "POST", tc.route, "200", contentTypeNDJSON)
			if schema == nil {
				t.Fatalf("POST %s 200 does not list %s", tc.route, contentTypeNDJSON)
			}
			resp := h.open(tc.path, tc.body, contentTypeNDJSON)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, contentTypeNDJSON) {
				t.Fatalf("status %d %s", resp.StatusCode, ct)
			}
			sc := bufio.NewScanner(resp.Body)
			lines := 0
			for sc.Scan() {
				var v any
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatalf("line %q: %v", sc.Text(), err)
				}
				if err := c.check(schema, v, tc.path+" line"); err != nil {
					t.Fatal(err)
				}
				lines++
			}
			if lines == 0 {
				t.Fatal("no lines")
			}
		})
	}
}

// TestRefusalsMatchDocument: the 415 of an unlisted body type and the 400
// of a malformed X-Request-Id are responses the document lists, with the
// headers it names.
func TestRefusalsMatchDocument(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	c := schemaChecker{doc: doc}
	h := newHarness(t)
	h.fake.write = func(_ context.Context, _ session.Key, p string, r io.Reader) (session.FileEntry, error) {
		_, _ = io.Copy(io.Discard, r)
		return session.FileEntry{Name: "f", Path: p, Type: "file", ModifiedAt: fakeNow}, nil
	}
	for _, cl := range []call{
		{method: "PUT", path: "/v1/sessions/s1/files/content?path=a.csv", body: `"a,b"`, headers: map[string]string{"Content-Type": "application/json"}},
		{method: "PUT", path: "/v1/sessions/s1/files/content?path=a.csv", body: "a,b", headers: map[string]string{"Content-Type": "text/csv"}},
		{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1"}`, headers: map[string]string{"Content-Type": "text/plain"}},
		{method: "GET", path: "/healthz", key: "-", headers: map[string]string{"X-Request-Id": "not ok"}},
		{method: "GET", path: "/v1/openapi.json", key: "-", headers: map[string]string{"X-Request-Id": "not ok"}},
		{method: "GET", path: "/v1/sessions", headers: map[string]string{"X-Request-Id": strings.Repeat("x", 129)}},
	} {
		resp, _ := h.do(cl)
		if resp.StatusCode != http.StatusUnsupportedMediaType && resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s %s: status %d, want a refusal", cl.method, cl.path, resp.StatusCode)
		}
		checkAgainstDoc(t, c, doc, cl, h)
	}
}
