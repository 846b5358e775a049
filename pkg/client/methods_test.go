package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// exchange is what a method must send and what the fake API answers.
type exchange struct {
	method, path, query string
	body                string // the JSON sent, exactly; "" for none
	header              map[string]string
	status              int
	answer              string
	answerHeader        map[string]string
}

// fakeFor serves exactly one exchange and fails the test on any other
// request.
func fakeFor(t *testing.T, ex exchange) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != ex.method || r.URL.EscapedPath() != ex.path || r.URL.RawQuery != ex.query {
			t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, ex.method, ex.path, ex.query)
		}
		if got := strings.TrimSpace(string(b)); got != ex.body {
			t.Errorf("%s %s: body %s, want %s", r.Method, r.URL.Path, got, ex.body)
		}
		if ex.path != "/healthz" && r.Header.Get("Authorization") != "Bearer sbx_test_0123456789" {
			t.Errorf("%s %s: Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		for k, v := range ex.header {
			if r.Header.Get(k) != v {
				t.Errorf("%s %s: header %s %q, want %q", r.Method, r.URL.Path, k, r.Header.Get(k), v)
			}
		}
		for k, v := range ex.answerHeader {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(ex.status)
		_, _ = io.WriteString(w, ex.answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestMethods: each method sends its operation's request and reads its
// answer.
func TestMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		ex    exchange
		call  func(*client.Client) (any, error)
		check func(t *testing.T, v any)
	}{
		{"Health", exchange{method: "GET", path: "/healthz", status: 200, answer: `{"status":"ok"}`},
			func(c *client.Client) (any, error) { return c.Health(ctx) },
			func(t *testing.T, v any) {
				if v.(string) != "ok" {
					t.Fatalf("status %q", v)
				}
			}},
		{"OpenAPI", exchange{method: "GET", path: "/v1/openapi.json", status: 200, answer: `{"openapi":"3.1.0"}`},
			func(c *client.Client) (any, error) { return c.OpenAPI(ctx) },
			func(t *testing.T, v any) {
				if !bytes.Contains(v.(json.RawMessage), []byte(`"3.1.0"`)) {
					t.Fatalf("doc %s", v)
				}
			}},
		{"StartSandbox", exchange{method: "POST", path: "/v1/sessions/s1/sandbox/start", status: 200,
			body:   `{"template":"base","envs":{"A":"1"},"idleTimeoutSecs":60,"pause":true,"persist":false}`,
			answer: `{"sessionId":"s1","state":"running","sandboxId":"sbx1","pauseOnIdle":true,"idleTimeoutSecs":60,"createdAt":"2026-11-26T10:00:00Z","persist":false}`},
			func(c *client.Client) (any, error) {
				return c.StartSandbox(ctx, "s1", client.StartOptions{Template: "base", Envs: map[string]string{"A": "1"}, IdleTimeoutSecs: 60, Pause: true, Persist: new(bool)})
			},
			func(t *testing.T, v any) {
				s := v.(*client.SessionView)
				if s.SandboxID != "sbx1" || !s.PauseOnIdle || s.CreatedAt == nil || !s.CreatedAt.Equal(at) || s.Persist == nil || *s.Persist {
					t.Fatalf("session %+v", s)
				}
			}},
		{"Stop", exchange{method: "POST", path: "/v1/sessions/s1/sandbox/stop", status: 200, body: `{}`,
			answer: `{"sessionId":"s1","state":"stopped","pauseOnIdle":false,"lastCheckpoint":{"at":"2026-11-26T10:00:00Z","files":2,"bytes":10}}`},
			func(c *client.Client) (any, error) { return c.Stop(ctx, "s1") },
			func(t *testing.T, v any) {
				s := v.(*client.SessionView)
				if s.State != "stopped" || s.LastCheckpoint == nil || s.LastCheckpoint.Files != 2 {
					t.Fatalf("session %+v", s)
				}
			}},
		{"DeleteFile", exchange{method: "DELETE", path: "/v1/sessions/s1/files", query: "path=data%2Fa+b.csv", status: 204},
			func(c *client.Client) (any, error) { return nil, c.DeleteFile(ctx, "s1", "data/a b.csv") },
			func(*testing.T, any) {}},
		{"WriteFile", exchange{method: "PUT", path: "/v1/sessions/s1/files/content", query: "path=a.txt", status: 200, body: "hello",
			header: map[string]string{"Content-Type": "application/octet-stream", "Content-Length": "5"},
			answer: `{"name":"a.txt","path":"/home/user/a.txt","type":"file","size":5,"modifiedAt":"2026-11-26T10:00:00Z"}`},
			func(c *client.Client) (any, error) {
				return c.WriteFile(ctx, "s1", "a.txt", strings.NewReader("hello"), 5)
			},
			func(t *testing.T, v any) {
				if e := v.(*session.FileEntry); e.Path != "/home/user/a.txt" || e.Size != 5 {
					t.Fatalf("entry %+v", e)
				}
			}},
		{"UploadURL", exchange{method: "POST", path: "/v1/sessions/s1/files/upload-url", status: 200, body: `{"path":"big.bin","sizeBytes":99}`,
			answer: `{"uploadUrl":"https://s3.example/x","method":"PUT","headers":{"Content-Type":"application/octet-stream"},"expiresAt":"2026-11-26T10:00:00Z","transferId":"t1"}`},
			func(c *client.Client) (any, error) { return c.UploadURL(ctx, "s1", "big.bin", 99) },
			func(t *testing.T, v any) {
				if tk := v.(*client.UploadTicket); tk.TransferID != "t1" || tk.Method != "PUT" || tk.Headers["Content-Type"] == "" || tk.ExpiresAt == nil {
					t.Fatalf("ticket %+v", tk)
				}
			}},
		{"ImportFile", exchange{method: "POST", path: "/v1/sessions/s1/files/import", status: 200, body: `{"transferId":"t1"}`,
			answer: `{"name":"big.bin","path":"/home/user/big.bin","type":"file","size":99,"modifiedAt":"2026-11-26T10:00:00Z"}`},
			func(c *client.Client) (any, error) { return c.ImportFile(ctx, "s1", "t1") },
			func(t *testing.T, v any) {
				if e := v.(*session.FileEntry); e.Size != 99 {
					t.Fatalf("entry %+v", e)
				}
			}},
		{"DownloadURL", exchange{method: "POST", path: "/v1/sessions/s1/files/download-url", status: 200, body: `{"path":"big.bin"}`,
			answer: `{"downloadUrl":"https://s3.example/y","expiresAt":"2026-11-26T10:00:00Z","sizeBytes":99}`},
			func(c *client.Client) (any, error) { return c.DownloadURL(ctx, "s1", "big.bin") },
			func(t *testing.T, v any) {
				if tk := v.(*client.DownloadTicket); tk.DownloadURL != "https://s3.example/y" || tk.SizeBytes != 99 {
					t.Fatalf("ticket %+v", tk)
				}
			}},
		{"SubmitRun", exchange{method: "POST", path: "/v1/sessions/s1/runs", status: 202, body: `{"code":"1+1","timeoutSecs":5}`,
			header: map[string]string{"Idempotency-Key": "k1"}, answer: `{"runId":"r1","status":"queued"}`},
			func(c *client.Client) (any, error) {
				return c.SubmitRun(ctx, "s1", client.RunRequest{Code: "1+1", TimeoutSecs: 5, IdempotencyKey: "k1"})
			},
			func(t *testing.T, v any) {
				if a := v.(*client.RunAccepted); a.RunID != "r1" || a.Status != session.RunQueued {
					t.Fatalf("accepted %+v", a)
				}
			}},
		{"ExecuteStream", exchange{method: "POST", path: "/v1/sessions/s1/execute/stream", status: 200, body: `{"code":"print(1)"}`,
			header:       map[string]string{"Accept": "application/x-ndjson"},
			answerHeader: map[string]string{"Content-Type": "application/x-ndjson"},
			answer: `{"type":"start"}` + "\n" + `{"type":"stdout","text":"1\n"}` + "\n" +
				`{"type":"done","summary":{"success":true,"executionCount":2,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n"},
			func(c *client.Client) (any, error) {
				return c.ExecuteStream(ctx, "s1", client.ExecuteRequest{Code: "print(1)"}, nil)
			},
			func(t *testing.T, v any) {
				if r := v.(*session.ExecResult); !r.Success || r.Stdout != "1\n" || r.ExecutionCount != 2 || r.Results == nil {
					t.Fatalf("result %+v", r)
				}
			}},
		{"ExecuteOnceStream", exchange{method: "POST", path: "/v1/execute/stream", status: 200, body: `{"code":"1","template":"base"}`,
			header:       map[string]string{"Accept": "application/x-ndjson"},
			answerHeader: map[string]string{"Content-Type": "application/x-ndjson"},
			answer: `{"type":"result","result":{"text":"1","isMainResult":true}}` + "\n" +
				`{"type":"done","summary":{"success":true,"durationMs":3,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n"},
			func(c *client.Client) (any, error) {
				return c.ExecuteOnceStream(ctx, client.OnceRequest{Code: "1", Template: "base"}, nil)
			},
			func(t *testing.T, v any) {
				if r := v.(*session.ExecResult); !r.Success || len(r.Results) != 1 || r.Results[0].Text != "1" {
					t.Fatalf("result %+v", r)
				}
			}},
		{"InstallStream", exchange{method: "POST", path: "/v1/sessions/s1/install/stream", status: 200, body: `{"packages":["tinylib==1.0"]}`,
			header:       map[string]string{"Accept": "application/x-ndjson"},
			answerHeader: map[string]string{"Content-Type": "application/x-ndjson"},
			answer: `{"type":"stdout","text":"Collecting tinylib\n"}` + "\n" + `{"type":"stderr","text":"warn\n"}` + "\n" +
				`{"type":"done","summary":{"success":true,"exitCode":0,"durationMs":5,"truncated":false,"restarted":true}}` + "\n"},
			func(c *client.Client) (any, error) {
				return c.InstallStream(ctx, "s1", []string{"tinylib==1.0"}, "", nil)
			},
			func(t *testing.T, v any) {
				if r := v.(*session.InstallResult); !r.Success || r.Stdout != "Collecting tinylib\n" || r.Stderr != "warn\n" || !r.Restarted || r.DurationMs != 5 {
					t.Fatalf("result %+v", r)
				}
			}},
		{"GetRun", exchange{method: "GET", path: "/v1/runs/r%2F1", status: 200,
			answer: `{"runId":"r/1","sessionId":"s1","status":"succeeded","result":{"success":true,"stdout":"2\n","stderr":"","results":[],"durationMs":3},"finishedAt":"2026-11-26T10:00:00Z"}`},
			func(c *client.Client) (any, error) { return c.GetRun(ctx, "r/1") },
			func(t *testing.T, v any) {
				r := v.(*client.Run)
				if r.Status != session.RunSucceeded || r.Result == nil || r.Result.Stdout != "2\n" || r.FinishedAt == nil {
					t.Fatalf("run %+v", r)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeFor(t, tt.ex)
			v, err := tt.call(client.New(srv.URL, "sbx_test_0123456789", nil))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, v)
		})
	}
}

// TestProblems: a non-2xx answer is a *Problem with the API's fields and
// Retry-After; an answer that is not problem+json keeps its status and
// text; an API that cannot be reached is an *UnreachableError naming it.
func TestProblems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name   string
		ex     exchange
		want   client.Problem
		isKind string
	}{
		{"limit with seconds", exchange{method: "GET", path: "/v1/sessions/s1/sandbox", status: 429,
			answer:       `{"type":"https://sessionbox.dev/problems/limit-reached","title":"Limit reached","status":429,"detail":"20 live sandboxes","requestId":"req-1"}`,
			answerHeader: map[string]string{"Content-Type": "application/problem+json", "Retry-After": "7"}},
			client.Problem{Type: "https://sessionbox.dev/problems/limit-reached", Title: "Limit reached", Status: 429, Detail: "20 live sandboxes", RequestID: "req-1", RetryAfter: 7 * time.Second}, "limit-reached"},
		{"not found", exchange{method: "GET", path: "/v1/sessions/s1/sandbox", status: 404,
			answer:       `{"type":"https://sessionbox.dev/problems/not-found","title":"Not found","status":404,"detail":"session \"s1\" not found"}`,
			answerHeader: map[string]string{"Content-Type": "application/problem+json"}},
			client.Problem{Type: "https://sessionbox.dev/problems/not-found", Title: "Not found", Status: 404, Detail: `session "s1" not found`}, "not-found"},
		{"a proxy's page", exchange{method: "GET", path: "/v1/sessions/s1/sandbox", status: 502, answer: "bad gateway\n",
			answerHeader: map[string]string{"Content-Type": "text/plain"}},
			client.Problem{Title: "Bad Gateway", Status: 502, Detail: "bad gateway"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeFor(t, tt.ex)
			_, err := client.New(srv.URL, "sbx_test_0123456789", nil).Status(ctx, "s1")
			var p *client.Problem
			if !errors.As(err, &p) {
				t.Fatalf("err %v, want a *Problem", err)
			}
			if *p != tt.want || p.Kind() != tt.isKind || !client.IsStatus(err, tt.want.Status) {
				t.Fatalf("problem %+v (kind %q), want %+v (kind %q)", *p, p.Kind(), tt.want, tt.isKind)
			}
		})
	}
	t.Run("retry-after as a date", func(t *testing.T) {
		t.Parallel()
		when := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
		srv := fakeFor(t, exchange{method: "GET", path: "/v1/sessions/s1/sandbox", status: 503,
			answer:       `{"type":"https://sessionbox.dev/problems/unavailable","title":"Unavailable","status":503}`,
			answerHeader: map[string]string{"Content-Type": "application/problem+json", "Retry-After": when}})
		_, err := client.New(srv.URL, "sbx_test_0123456789", nil).Status(ctx, "s1")
		var p *client.Problem
		if !errors.As(err, &p) || p.RetryAfter < 80*time.Second || p.RetryAfter > 90*time.Second {
			t.Fatalf("err %v (%+v), want Retry-After about 90s", err, p)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		_ = ln.Close()
		_, err = client.New(url, "sbx_test_0123456789", nil).Status(ctx, "s1")
		var u *client.UnreachableError
		if !errors.As(err, &u) || u.URL != url || u.Reason() != "connection refused" ||
			err.Error() != "cannot reach sessionbox at "+url+": connection refused" {
			t.Fatalf("err %v, want an UnreachableError for %s", err, url)
		}
	})
}
