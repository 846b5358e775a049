package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestValidCallsReachManagerAsCaller(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, vc := range validCalls {
		t.Run(vc.call.method+" "+vc.call.path, func(t *testing.T) {
			for _, key := range []string{keyAlice, keyBob} {
				c := vc.call
				c.key = key
				resp, body := h.do(c)
				if resp.StatusCode != vc.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, vc.status, body)
				}
				calls := h.fake.called()
				if calls[len(calls)-1] != vc.method {
					t.Fatalf("reached %v, want %s", calls, vc.method)
				}
				want := map[string]string{keyAlice: "alice", keyBob: "bob"}[key]
				if got := h.fake.lastKey(); got.Tenant != "t1" || got.Principal != want {
					t.Fatalf("manager called as %+v, want t1/%s", got, want)
				}
			}
		})
	}
}

func TestResponseShapes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		call call
		want string
	}{
		{call{method: "GET", path: "/v1/sessions/s1/sandbox"},
			`{"sessionId":"s1","state":"running","type":"code_interpreter","sandboxId":"sbx_1","template":"code-interpreter-v1","metadata":{"chat":"42"},"pauseOnIdle":false,"createdAt":"2026-01-02T03:04:05Z","lastActivityAt":"2026-01-02T03:04:05Z","idleDeadline":"2026-01-02T03:34:05Z","lifetimeDeadline":"2026-01-02T05:04:05Z"}`},
		{call{method: "GET", path: "/v1/sessions/s1/sandbox/metrics"},
			`{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":268435456,"memTotalBytes":1073741824,"diskUsedBytes":1048576,"diskTotalBytes":10737418240,"samples":[{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":268435456,"memTotalBytes":1073741824,"diskUsedBytes":1048576,"diskTotalBytes":10737418240}]}`},
		{call{method: "POST", path: "/v1/sessions/s1/sandbox/stop"},
			`{"sessionId":"s1","state":"stopped","type":"code_interpreter","template":"code-interpreter-v1","metadata":{"chat":"42"},"pauseOnIdle":false,"createdAt":"2026-01-02T03:04:05Z","lastActivityAt":"2026-01-02T03:04:05Z"}`},
		{call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":"1+1"}`},
			`{"success":true,"stdout":"hi\n","stderr":"","results":[{"text":"2","isMainResult":true}],"executionCount":1,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false,"artifacts":[{"path":"/home/user/a.png","sizeBytes":10,"mimeType":"image/png","downloadUrl":"http://x/a"}]}`},
		{call{method: "POST", path: "/v1/sessions/s1/install", body: `{"packages":["tinylib"]}`},
			`{"success":true,"exitCode":0,"stdout":"Successfully installed tinylib-1.0\n","stderr":"","durationMs":7,"truncated":false,"restarted":false}`},
		{call{method: "GET", path: "/v1/sessions"},
			`{"sessions":[{"sessionId":"s1","state":"running","type":"code_interpreter","sandboxId":"sbx_1","template":"code-interpreter-v1","metadata":{"chat":"42"},"pauseOnIdle":false,"createdAt":"2026-01-02T03:04:05Z","lastActivityAt":"2026-01-02T03:04:05Z","idleDeadline":"2026-01-02T03:34:05Z","lifetimeDeadline":"2026-01-02T05:04:05Z"}],"nextCursor":"next-1"}`},
		{call{method: "GET", path: "/v1/sessions/s1/files"},
			`{"entries":[{"name":"a.txt","path":"/home/user/a.txt","type":"file","size":5,"modifiedAt":"2026-01-02T03:04:05Z"}]}`},
		{call{method: "POST", path: "/v1/sessions/s1/files/upload-url", body: `{"path":"x.csv","sizeBytes":3,"contentType":"text/csv"}`},
			`{"uploadUrl":"http://127.0.0.1/s3/x","method":"PUT","headers":{"Content-Type":"text/csv"},"expiresAt":"2026-01-02T03:19:05Z","transferId":"tr_1"}`},
		{call{method: "POST", path: "/v1/sessions/s1/files/download-url", body: `{"path":"x.csv"}`},
			`{"downloadUrl":"http://127.0.0.1/s3/y","expiresAt":"2026-01-02T03:19:05Z","sizeBytes":5}`},
		{call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"code":"42"}`}, `{"runId":"run1","status":"queued"}`},
		{call{method: "GET", path: "/v1/runs/run9"},
			`{"runId":"run9","sessionId":"s1","status":"succeeded","result":{"success":true,"stdout":"hi\n","stderr":"","results":[{"text":"2","isMainResult":true}],"executionCount":1,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false,"artifacts":[{"path":"/home/user/a.png","sizeBytes":10,"mimeType":"image/png","downloadUrl":"http://x/a"}]},"createdAt":"2026-01-02T03:04:05Z","startedAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:06Z"}`},
		{call{method: "GET", path: "/v1/runs/" + fakeLargeRun},
			`{"runId":"run-large","sessionId":"s1","status":"succeeded","resultUrl":"http://127.0.0.1/s3/result","resultExpiresAt":"2026-01-02T03:19:05Z","createdAt":"2026-01-02T03:04:05Z","startedAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:06Z"}`},
		{call{method: "GET", path: "/healthz", key: "-"}, `{"status":"ok"}`},
		{call{method: "POST", path: "/v1/sessions/s1/checkpoint"}, `{"at":"2026-01-02T03:04:05Z","files":3,"bytes":1234}`},
	}
	for _, tc := range cases {
		t.Run(tc.call.method+" "+tc.call.path, func(t *testing.T) {
			resp, body := h.do(tc.call)
			if resp.StatusCode/100 != 2 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("Content-Type %q, X-Content-Type-Options %q", ct, resp.Header.Get("X-Content-Type-Options"))
			}
			if got := strings.TrimSpace(string(body)); got != tc.want {
				t.Fatalf("body\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestRunsAccepted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var got session.RunRequest
	h.fake.submit = func(_ context.Context, key session.Key, req session.RunRequest) (*session.Run, error) {
		got = req
		return &session.Run{ID: "r/1", Key: key, Status: session.RunQueued}, nil
	}
	resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/runs", body: `{"code":"print(1)","timeoutSecs":9}`,
		headers: map[string]string{"Idempotency-Key": "retry-7"}})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if loc := resp.Header.Get("Location"); loc != "/v1/runs/r%2F1" {
		t.Fatalf("Location %q", loc)
	}
	if got != (session.RunRequest{Code: "print(1)", TimeoutSecs: 9, IdempotencyKey: "retry-7"}) {
		t.Fatalf("manager got %+v", got)
	}
}

func TestListPassesPaging(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var gotLimit int
	var gotCursor string
	h.fake.list = func(_ context.Context, _, _ string, limit int, cursor string) ([]*session.Session, string, error) {
		gotLimit, gotCursor = limit, cursor
		return nil, "", nil
	}
	resp, body := h.do(call{method: "GET", path: "/v1/sessions"})
	if resp.StatusCode != 200 || gotLimit != 20 || gotCursor != "" || strings.TrimSpace(string(body)) != `{"sessions":[]}` {
		t.Fatalf("default paging: status %d limit %d cursor %q body %s", resp.StatusCode, gotLimit, gotCursor, body)
	}
	h.do(call{method: "GET", path: "/v1/sessions?limit=100&cursor=eyJ4IjoxfQ%3D%3D"})
	if gotLimit != 100 || gotCursor != "eyJ4IjoxfQ==" {
		t.Fatalf("paging: limit %d cursor %q", gotLimit, gotCursor)
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err        error
		status     int
		slug       string
		detail     string
		retryAfter string
		generic    bool // the stock detail, which names the request's session or run
	}{
		{session.Errorf(session.ErrInvalid, "template %q is unknown", "x"), 400, "invalid-input", `template "x" is unknown`, "", false},
		{session.Errorf(session.ErrUnauthorized, "no"), 401, "unauthorized", "no", "", false},
		{session.Errorf(session.ErrForbidden, "tenant is disabled"), 403, "forbidden", "tenant is disabled", "", false},
		{fmt.Errorf("load: %w", session.Errorf(session.ErrNotFound, "no session s1")), 404, "not-found", "no session s1", "", false},
		{session.ErrNotFound, 404, "not-found", "not found", "", true},
		{session.Errorf(session.ErrConflict, "the session is stopping"), 409, "conflict", "the session is stopping", "", false},
		{session.Errorf(session.ErrGone, "context %q is gone", "c1"), 410, "gone", `context "c1" is gone`, "", false},
		{session.Errorf(session.ErrTooLarge, "file is 9 MB"), 413, "too-large", "file is 9 MB", "", false},
		{&session.Error{Kind: session.ErrLimit, Detail: "20 live sandboxes", RetryAfter: 1500 * time.Millisecond}, 429, "limit-reached", "20 live sandboxes", "2", false},
		{session.Errorf(session.ErrSandboxGone, "gone"), 502, "unavailable", "gone", "", false},
		{fmt.Errorf("dial: %w", session.ErrUnavailable), 502, "unavailable", "a service behind the API is unavailable; try again", "", true},
		{session.Errorf(session.ErrTimeout, "execution ran past 5s"), 504, "timeout", "execution ran past 5s", "", false},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), 504, "timeout", "the operation timed out", "", true},
		{errors.New("dynamodb: secret table arn:aws:xyz"), 500, "internal", "an internal error occurred; quote the request id when reporting it", "", false},
	}
	h := newHarness(t)
	for _, tc := range cases {
		for _, vc := range validCalls {
			t.Run(fmt.Sprintf("%d %s %s", tc.status, vc.call.method, vc.call.path), func(t *testing.T) {
				h.fake.mu.Lock()
				h.fake.err = tc.err
				h.fake.mu.Unlock()
				resp, body := h.do(vc.call)
				p := checkProblem(t, resp, body, tc.status)
				want := tc.detail
				if tc.generic {
					want = subjectOf(vc.call.path) + want
				}
				if p.Type != problemBase+tc.slug || p.Detail != want {
					t.Fatalf("problem %+v, want %s %q", p, tc.slug, want)
				}
				if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
					t.Fatalf("Retry-After %q, want %q", got, tc.retryAfter)
				}
				if tc.status == 500 && !strings.Contains(h.logs.String(), "secret table") {
					t.Fatalf("a 500 must log its cause")
				}
			})
		}
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	revoked := "sbx_revoked_000000"
	h.fake.keys2[revoked] = &session.APIKey{Hash: session.HashAPIKey(revoked), Tenant: "t1", Principal: "eve", RevokedAt: fakeNow}
	// The Manager's lookup is the only check of the key's hash: a record it
	// returns stands, whatever hash it carries.
	looked := "sbx_looked_up_000000"
	h.fake.keys2[looked] = &session.APIKey{Tenant: "t1", Principal: "carol"}
	anonymous := "sbx_anonymous_000000"
	h.fake.keys2[anonymous] = &session.APIKey{Hash: session.HashAPIKey(anonymous), Tenant: "t1"}
	cases := []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"no credentials", nil, 401},
		{"bearer", map[string]string{"Authorization": "Bearer " + keyAlice}, 200},
		{"bearer lower-case scheme", map[string]string{"Authorization": "bearer " + keyAlice}, 200},
		{"x-api-key", map[string]string{"X-API-Key": keyBob}, 200},
		{"basic scheme", map[string]string{"Authorization": "Basic YWxpY2U6cHc="}, 401},
		{"basic scheme beside x-api-key", map[string]string{"Authorization": "Basic YWxpY2U6cHc=", "X-API-Key": keyBob}, 200},
		{"bearer before x-api-key", map[string]string{"Authorization": "Bearer sbx_nope", "X-API-Key": keyBob}, 401},
		{"empty bearer", map[string]string{"Authorization": "Bearer "}, 401},
		{"unknown key", map[string]string{"Authorization": "Bearer sbx_nope"}, 401},
		{"revoked key", map[string]string{"X-API-Key": revoked}, 401},
		{"key the Manager found", map[string]string{"X-API-Key": looked}, 200},
		{"key without a principal", map[string]string{"X-API-Key": anonymous}, 401},
		{"huge key", map[string]string{"X-API-Key": strings.Repeat("k", 600)}, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/sandbox", key: "-", headers: tc.headers})
			if tc.status == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			checkProblem(t, resp, body, tc.status)
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("public routes", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/v1/openapi.json"} {
			if resp, body := h.do(call{method: "GET", path: p, key: "-"}); resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", p, resp.StatusCode, body)
			}
		}
	})
	t.Run("store failure is not a 401", func(t *testing.T) {
		h.fake.mu.Lock()
		h.fake.authErr = session.Errorf(session.ErrUnavailable, "store down")
		h.fake.mu.Unlock()
		defer func() { h.fake.mu.Lock(); h.fake.authErr = nil; h.fake.mu.Unlock() }()
		resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/sandbox"})
		checkProblem(t, resp, body, 502)
	})
	t.Run("no secrets in logs", func(t *testing.T) {
		if strings.Contains(h.logs.String(), keyAlice) || strings.Contains(h.logs.String(), keyBob) {
			t.Fatalf("logs hold an API key: %s", h.logs.String())
		}
	})
}

func TestWithIdentity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, WithIdentity(func(r *http.Request) (string, string, bool) {
		tenant, principal, ok := strings.Cut(r.Header.Get("X-Test-Identity"), "/")
		return tenant, principal, ok
	}))
	resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/sandbox", key: "-", headers: map[string]string{"X-Test-Identity": "t9/carol"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if k := h.fake.lastKey(); k != (session.Key{Tenant: "t9", Principal: "carol", SessionID: "s1"}) {
		t.Fatalf("key %+v", k)
	}
	// API keys mean nothing once identities come from elsewhere.
	resp, body = h.do(call{method: "GET", path: "/v1/sessions/s1/sandbox"})
	checkProblem(t, resp, body, 401)
	resp, body = h.do(call{method: "GET", path: "/v1/sessions/s1/sandbox", key: "-", headers: map[string]string{"X-Test-Identity": "t9/"}})
	checkProblem(t, resp, body, 401)
	if slices.Contains(h.fake.called(), "Authenticate") {
		t.Fatalf("API keys were consulted: %v", h.fake.called())
	}
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	resp, _ := h.do(call{method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": "abc-123"}})
	if got := resp.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("echoed %q", got)
	}
	// An empty header counts as absent: the service picks an id.
	resp, _ = h.do(call{method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": ""}})
	if got := resp.Header.Get("X-Request-Id"); resp.StatusCode != 200 || len(got) != 32 {
		t.Fatalf("no id: status %d, generated %q", resp.StatusCode, got)
	}
	// Any other value outside the documented form is refused, on public
	// and authenticated routes alike, with an id the service chose.
	for _, tc := range []struct{ path, sent string }{
		{"/healthz", "has space"},
		{"/healthz", strings.Repeat("x", 129)},
		{"/v1/sessions/s1/sandbox", "a/b"},
		{"/v1/sessions/s1/sandbox", "é"},
	} {
		resp, body := h.do(call{method: "GET", path: tc.path, headers: map[string]string{"X-Request-Id": tc.sent}})
		p := checkProblem(t, resp, body, 400)
		if !strings.Contains(p.Detail, "X-Request-Id") {
			t.Errorf("%q: detail %q does not name the header", tc.sent, p.Detail)
		}
		if got := resp.Header.Get("X-Request-Id"); len(got) != 32 || p.RequestID != got {
			t.Errorf("%q: answered with id %q, problem's %q", tc.sent, got, p.RequestID)
		}
	}
	resp, _ = h.do(call{method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": strings.Repeat("x", 128)}})
	if resp.StatusCode != 200 {
		t.Fatalf("a 128-character id: status %d", resp.StatusCode)
	}
	a, _ := h.do(call{method: "GET", path: "/healthz"})
	b, _ := h.do(call{method: "GET", path: "/healthz"})
	if a.Header.Get("X-Request-Id") == b.Header.Get("X-Request-Id") {
		t.Fatalf("request ids repeat")
	}
}

func TestPlatformRequestIDs(t *testing.T) {
	t.Parallel()
	var platform atomic.Value
	h := newHarness(t, WithRequestID(func(*http.Request) string { return platform.Load().(string) }))
	cases := []struct{ sent, platform, want string }{
		{"client-1", "gw-req-1", "client-1"},
		{"", "gw-req-1", "gw-req-1"},
	}
	for _, tc := range cases {
		platform.Store(tc.platform)
		resp, _ := h.do(call{method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": tc.sent}})
		if got := resp.Header.Get("X-Request-Id"); got != tc.want {
			t.Fatalf("sent %q: id %q, want %q", tc.sent, got, tc.want)
		}
	}
	platform.Store("not valid either")
	resp, _ := h.do(call{method: "GET", path: "/healthz"})
	if got := resp.Header.Get("X-Request-Id"); len(got) != 32 {
		t.Fatalf("generated %q", got)
	}
}

func TestPanicBecomesProblem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fake.start = func(context.Context, session.Key, session.StartOptions) (*session.Session, error) {
		panic("boom in start")
	}
	resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/sandbox/start", headers: map[string]string{"X-Request-Id": "panic-1"}})
	p := checkProblem(t, resp, body, 500)
	if strings.Contains(p.Detail, "boom") {
		t.Fatalf("panic value leaked: %s", body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "boom in start") || !strings.Contains(logs, `"requestId":"panic-1"`) {
		t.Fatalf("panic not logged with request id: %s", logs)
	}
}

func TestAccessLogHidesCode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	code := `token = "hunter2-very-secret"`
	resp, body := h.do(call{method: "POST", path: "/v1/sessions/s1/execute", body: `{"code":` + strconvQuote(code) + `}`,
		headers: map[string]string{"X-Request-Id": "log-1"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	logs := h.logs.String()
	if strings.Contains(logs, "hunter2") {
		t.Fatalf("code in logs: %s", logs)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if strings.Contains(l, `"requestId":"log-1"`) {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line["codeBytes"] != float64(len(code)) || len(fmt.Sprint(line["codeSha256"])) != 16 ||
		line["principal"] != "alice" || line["status"] != float64(200) || line["route"] != "POST /v1/sessions/{id}/execute" {
		t.Fatalf("access log line %v", line)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// subjectOf is how a stock problem detail names the request's session or
// run.
func subjectOf(path string) string {
	path, _, _ = strings.Cut(path, "?")
	if rest, ok := strings.CutPrefix(path, "/v1/sessions/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		return fmt.Sprintf("session %q: ", id)
	}
	if id, ok := strings.CutPrefix(path, "/v1/runs/"); ok {
		return fmt.Sprintf("run %q: ", id)
	}
	return ""
}
