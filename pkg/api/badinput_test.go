package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestBadInput sends every kind of request the HTTP layer refuses (JSON
// shape, body size, media types, path and query parameters) to the routes
// it applies to: each gets a problem with a 4xx status, and none reaches
// the Manager. Values the Manager judges are TestEndToEndValidation's.
func TestBadInput(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 129)
	big := `{"code":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		name   string
		call   call
		status int
		detail string // a part of the detail the user must see
	}{
		// JSON bodies
		{"malformed json", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":`}, 400, "malformed JSON"},
		{"syntax error", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code" "x"}`}, 400, "malformed JSON at byte"},
		{"unknown field", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1","cod":"x"}`}, 400, `unknown field "cod"`},
		{"wrong type", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":1}`}, 400, `field "code" must be a string`},
		{"wrong nested type", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1","envs":{"A":2}}`}, 400, "must be a string"},
		{"array body", call{method: "POST", path: "/v1/sessions/s1/execute", body: `["code"]`}, 400, "must be a JSON object"},
		{"trailing data", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1"} {"code":"2"}`}, 400, "exactly one JSON object"},
		{"empty body", call{method: "POST", path: "/v1/sessions/s1/execute"}, 400, "empty"},
		{"null body", call{method: "POST", path: "/v1/sessions/s1/execute", body: `null`}, 400, `"code" is required`},
		{"missing code", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{}`}, 400, `"code" is required`},
		{"fractional timeout", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1","timeoutSecs":1.5}`}, 400, "timeoutSecs"},
		{"body too large", call{method: "POST", path: "/v1/sessions/s1/execute", body: big}, 413, "larger than"},
		{"form body", call{method: "POST", path: "/v1/sessions/s1/execute", body: `code=1`, headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, "application/json"},
		{"text body", call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"code":"1"}`, headers: map[string]string{"Content-Type": "text/plain"}}, 415, "application/json"},
		{"bad content type", call{method: "POST", path: "/v1/sessions/s1/files/import", body: `{}`, headers: map[string]string{"Content-Type": ";;"}}, 415, "application/json"},
		{"html accept", call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1"}`, headers: map[string]string{"Accept": "text/html"}}, 406, "application/json"},
		// session ids
		{"id too long", call{method: "GET", path: "/v1/sessions/" + long + "/sandbox"}, 400, "session id"},
		{"id with space", call{method: "GET", path: "/v1/sessions/a%20b/sandbox"}, 400, "session id"},
		{"id with slash", call{method: "POST", path: "/v1/sessions/a%2Fb/execute", body: `{"code":"1"}`}, 400, "session id"},
		{"id with unicode", call{method: "POST", path: "/v1/sessions/%C3%A9/reset"}, 400, "session id"},
		// start
		{"pause not bool", call{method: "POST", path: "/v1/sessions/s1/sandbox/start", body: `{"pause":"yes"}`}, 400, `"pause" must be a boolean`},
		{"stop with fields", call{method: "POST", path: "/v1/sessions/s1/sandbox/stop", body: `{"force":true}`}, 400, "unknown field"},
		{"reset with garbage", call{method: "POST", path: "/v1/sessions/s1/reset", body: `xyz`}, 400, "malformed JSON"},
		// install
		{"option as package", call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["--index-url=http://evil"]}`}, 400, "--index-url"},
		{"shell in package", call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["numpy; rm -rf /"]}`}, 400, "numpy"},
		{"url as package", call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["https://evil/x.whl"]}`}, 400, "evil"},
		{"ftp index", call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["x"],"indexUrl":"ftp://h/simple"}`}, 400, "indexUrl"},
		{"packages not array", call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":"x"}`}, 400, `"packages" must be an array`},
		// files
		{"missing path", call{method: "GET", path: "/v1/sessions/s1/files/content"}, 400, `"path" is required`},
		{"empty path", call{method: "DELETE", path: "/v1/sessions/s1/files?path="}, 400, "path"},
		{"NUL in path", call{method: "GET", path: "/v1/sessions/s1/files/content?path=a%00b"}, 400, "path"},
		{"NUL in put path", call{method: "PUT", path: "/v1/sessions/s1/files/content?path=a%00b", body: "x"}, 400, "path"},
		{"depth zero", call{method: "GET", path: "/v1/sessions/s1/files?depth=0"}, 400, `"depth"`},
		{"depth word", call{method: "GET", path: "/v1/sessions/s1/files?depth=deep"}, 400, `"depth"`},
		{"depth huge", call{method: "GET", path: "/v1/sessions/s1/files?depth=1000"}, 400, `"depth"`},
		{"repeated path", call{method: "GET", path: "/v1/sessions/s1/files?path=a&path=b"}, 400, "more than once"},
		{"malformed query", call{method: "GET", path: "/v1/sessions/s1/files?path=%zz"}, 400, "malformed query"},
		{"upload without size", call{method: "POST", path: "/v1/sessions/s1/files/upload-url", body: `{"path":"a"}`}, 400, `"sizeBytes" is required`},
		{"upload size string", call{method: "POST", path: "/v1/sessions/s1/files/upload-url", body: `{"path":"a","sizeBytes":"10"}`}, 400, `"sizeBytes" must be an integer`},
		{"upload without path", call{method: "POST", path: "/v1/sessions/s1/files/upload-url", body: `{"sizeBytes":1}`}, 400, `"path" is required`},
		{"import without id", call{method: "POST", path: "/v1/sessions/s1/files/import", body: `{}`}, 400, "transferId"},
		{"download without path", call{method: "POST", path: "/v1/sessions/s1/files/download-url", body: `{}`}, 400, `"path" is required`},
		// sessions list
		{"limit zero", call{method: "GET", path: "/v1/sessions?limit=0"}, 400, `"limit"`},
		{"limit too big", call{method: "GET", path: "/v1/sessions?limit=101"}, 400, `"limit"`},
		{"limit word", call{method: "GET", path: "/v1/sessions?limit=ten"}, 400, `"limit"`},
		{"cursor control chars", call{method: "GET", path: "/v1/sessions?cursor=a%0Ab"}, 400, `"cursor"`},
		{"cursor too long", call{method: "GET", path: "/v1/sessions?cursor=" + strings.Repeat("c", 3000)}, 400, `"cursor"`},
		// runs
		{"run without code", call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"timeoutSecs":1}`}, 400, `"code" is required`},
	}
	h := newHarness(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.fake.called())
			resp, body := h.do(tc.call)
			p := checkProblem(t, resp, body, tc.status)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("detail %q lacks %q", p.Detail, tc.detail)
			}
			if calls := h.fake.called()[before:]; len(calls) > 0 && calls[len(calls)-1] != "Authenticate" {
				t.Fatalf("bad input reached the manager: %v", calls)
			}
		})
	}
}

func TestInlineFileLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, WithInlineFileLimit(1024))
	cases := []struct {
		name    string
		body    string
		chunked bool
		status  int
	}{
		{"at the limit", strings.Repeat("x", 1024), false, 200},
		{"declared past the limit", strings.Repeat("x", 1025), false, 413},
		{"streamed past the limit", strings.Repeat("x", 4096), true, 413},
		{"streamed under the limit", strings.Repeat("x", 10), true, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("PUT", h.srv.URL+"/v1/sessions/s1/files/content?path=f.bin", strings.NewReader(tc.body))
			req.Header.Set("X-API-Key", keyAlice)
			if tc.chunked {
				req.ContentLength = -1
			}
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := readAll(t, resp)
			if tc.status == 413 {
				p := checkProblem(t, resp, body, 413)
				if !strings.Contains(p.Detail, "upload-url") {
					t.Fatalf("detail %q does not point to upload-url", p.Detail)
				}
				return
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		})
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		call   call
		status int
		allow  string
	}{
		{call{method: "GET", path: "/nope"}, 404, ""},
		{call{method: "GET", path: "/v1/sessions/s1/unknown"}, 404, ""},
		{call{method: "GET", path: "/v2/sessions"}, 404, ""},
		{call{method: "DELETE", path: "/v1/sessions/s1/sandbox"}, 405, "GET"},
		{call{method: "GET", path: "/v1/sessions/s1/execute"}, 405, "POST"},
		{call{method: "PUT", path: "/v1/sessions/s1/files"}, 405, "GET, DELETE"},
		{call{method: "POST", path: "/v1/sessions/s1/files/content"}, 405, "GET, PUT"},
		{call{method: "POST", path: "/healthz", key: "-"}, 405, "GET"},
		{call{method: "PATCH", path: "/v1/runs/r1"}, 405, "GET"},
	}
	for _, tc := range cases {
		t.Run(tc.call.method+" "+tc.call.path, func(t *testing.T) {
			resp, body := h.do(tc.call)
			checkProblem(t, resp, body, tc.status)
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

// TestEmptyOptionalBodies accepts body-less POSTs whatever Content-Type the
// client put on them: curl sends a form type even for an empty -d.
func TestEmptyOptionalBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, path := range []string{"/v1/sessions/s1/sandbox/start", "/v1/sessions/s1/sandbox/stop", "/v1/sessions/s1/reset"} {
		req, _ := http.NewRequest("POST", h.srv.URL+path, http.NoBody)
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	// A body that is there must be JSON.
	resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/sandbox/start", body: "type=custom",
		headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	checkProblem(t, resp, body, 415)
}

// TestIndexURLRulesAreTheDomains holds install's indexUrl check to
// session.ValidateIndexURL: the API accepts exactly the URLs it accepts.
func TestIndexURLRulesAreTheDomains(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, u := range []string{
		"http://127.0.0.1:9/simple",
		"https://pypi.example/simple/",
		"https://user:token@private.example/simple", // private indexes authenticate in the URL
		"ftp://h/simple",
		"https:///simple",
		"https://h/simple;rm -rf",
		"https://h/" + strings.Repeat("a", 2048),
	} {
		t.Run(u[:min(len(u), 48)], func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"packages": []string{"x"}, "indexUrl": u})
			resp, raw := h.do(call{method: "POST", path: "/v1/sessions/s1/install", body: string(body)})
			if err := session.ValidateIndexURL(u); err != nil {
				p := checkProblem(t, resp, raw, 400)
				if p.Detail != domainDetail(err) {
					t.Fatalf("detail %q, want the domain's %q", p.Detail, domainDetail(err))
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("the domain accepts %q, the API answers %d: %s", u, resp.StatusCode, raw)
			}
		})
	}
}
