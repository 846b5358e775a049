package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCreateRequest(t *testing.T) {
	f := false
	tests := []struct {
		name     string
		params   CreateParams
		wantPath string
		wantBody map[string]any
	}{
		{"defaults", CreateParams{}, "/v2/sandboxes", map[string]any{"templateID": "base"}},
		{"full", CreateParams{Template: "code-interpreter-v1", Timeout: 1500 * time.Millisecond,
			Metadata: map[string]string{"k": "v"}, Envs: map[string]string{"A": "1"}, AutoPause: true,
			AutoResume: true, AllowInternetAccess: &f}, "/v2/sandboxes",
			map[string]any{"templateID": "code-interpreter-v1", "timeout": 2.0, "metadata": map[string]any{"k": "v"},
				"envVars": map[string]any{"A": "1"}, "autoPause": true, "autoResume": map[string]any{"enabled": true},
				"allow_internet_access": false}},
		{"insecure through v1", CreateParams{Template: "base", Secure: &f}, "/sandboxes",
			map[string]any{"templateID": "base", "secure": false, "timeout": 300.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			var path, key string
			srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path, key = r.Method+" "+r.URL.Path, r.Header.Get("X-API-Key")
				_ = json.NewDecoder(r.Body).Decode(&got)
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, sandboxJSON)
			}))
			c := newTestClient(t, testConfig(srv.URL, ""))
			sb, err := c.Create(context.Background(), tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if path != "POST "+tt.wantPath || key != "e2b_test" {
				t.Errorf("request %q key %q", path, key)
			}
			if !reflect.DeepEqual(got, tt.wantBody) {
				t.Errorf("body = %v, want %v", got, tt.wantBody)
			}
			if sb.ID != "abc123" || sb.AccessToken() != "tok" || sb.Domain != "example.test" || sb.EnvdVersion != "0.6.13" {
				t.Errorf("sandbox = %+v", sb)
			}
		})
	}
}

func TestConnectResumed(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusCreated} {
		var body string
		srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			body = r.URL.Path + " " + string(b)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, sandboxJSON)
		}))
		c := newTestClient(t, testConfig(srv.URL, ""))
		sb, err := c.Connect(context.Background(), "abc123", ConnectParams{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if sb.Resumed != (status == http.StatusCreated) {
			t.Errorf("status %d: resumed = %v", status, sb.Resumed)
		}
		if body != `/v2/sandboxes/abc123/connect {"timeout":60}` {
			t.Errorf("request = %s", body)
		}
	}
}

func TestAPIErrorMapping(t *testing.T) {
	type call func(*Client) error
	getInfo := func(c *Client) error { _, err := c.GetInfo(context.Background(), "sb1"); return err }
	kill := func(c *Client) error { return c.Kill(context.Background(), "sb1") }
	pause := func(c *Client) error { return c.Pause(context.Background(), "sb1") }
	create := func(c *Client) error { _, err := c.Create(context.Background(), CreateParams{}); return err }
	list := func(c *Client) error { _, err := c.ListPage(context.Background(), ListParams{}); return err }
	tests := []struct {
		name       string
		call       call
		reply      reply
		wantIs     []error
		wantNot    []error
		wantStatus int
		wantCode   string
		wantMsg    string
		retryAfter time.Duration
	}{
		{"get 404", getInfo, reply{404, `{"code":404,"message":"sandbox \"sb1\" not found"}`, nil},
			[]error{ErrSandboxNotFound, ErrNotFound}, []error{ErrTimeout}, 404, "", `sandbox "sb1" not found`, 0},
		{"kill 404", kill, reply{404, `{"code":404,"message":"nope"}`, nil}, []error{ErrSandboxNotFound}, nil, 404, "", "nope", 0},
		{"body code wins", kill, reply{400, `{"code":404,"message":"gone"}`, nil}, []error{ErrSandboxNotFound}, []error{ErrInvalidArgument}, 404, "", "gone", 0},
		{"pause 409", pause, reply{409, `{"code":409,"message":"Sandbox 'sb1' cannot be paused while in 'paused' state"}`, nil},
			[]error{ErrConflict}, []error{ErrNotFound}, 409, "", "Sandbox 'sb1' cannot be paused while in 'paused' state", 0},
		{"401", list, reply{401, `{"code":401,"message":"Invalid API key"}`, nil}, []error{ErrAuthentication}, nil, 401, "", "Invalid API key", 0},
		{"400", create, reply{400, `{"code":400,"message":"bad template"}`, nil}, []error{ErrInvalidArgument}, []error{ErrNotFound}, 400, "", "bad template", 0},
		{"429", create, reply{429, `{"code":429,"message":"slow down"}`, map[string]string{"Retry-After": "7"}},
			[]error{ErrRateLimited}, nil, 429, "", "slow down", 7 * time.Second},
		{"503 error_code", create, reply{503, `{"code":503,"message":"no capacity","error_code":"sandbox_capacity_unavailable"}`, nil},
			[]error{ErrUnavailable}, nil, 503, "sandbox_capacity_unavailable", "no capacity", 0},
		{"504", list, reply{504, `gateway timeout`, nil}, []error{ErrTimeout, ErrUnavailable}, nil, 504, "", "gateway timeout", 0},
		{"500 plain", list, reply{500, "boom\n", nil}, nil, []error{ErrNotFound, ErrUnavailable}, 500, "", "boom", 0},
		{"404 on list is not a sandbox", list, reply{404, `{"code":404,"message":"x"}`, nil}, []error{ErrNotFound}, []error{ErrSandboxNotFound}, 404, "", "x", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeServer(t, &scripted{replies: []reply{tt.reply}})
			cfg := testConfig(srv.URL, "")
			cfg.Retry.MaxAttempts = 1
			cfg.Retry.MaxRateLimitWait = -1 // a create's 429 is reported, not waited out
			err := tt.call(newTestClient(t, cfg))
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("errors.Is(%v, %v) = false", err, want)
				}
			}
			for _, not := range tt.wantNot {
				if errors.Is(err, not) {
					t.Errorf("errors.Is(%v, %v) = true", err, not)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			if e.StatusCode != tt.wantStatus || e.Code != tt.wantCode || e.Message != tt.wantMsg || e.RetryAfter != tt.retryAfter {
				t.Errorf("got status %d code %q msg %q retryAfter %v", e.StatusCode, e.Code, e.Message, e.RetryAfter)
			}
			if e.Op == "" || !strings.Contains(e.Error(), e.Op) {
				t.Errorf("error text %q lacks op", e.Error())
			}
		})
	}
}

func TestRetry(t *testing.T) {
	getInfo := func(c *Client) error { _, err := c.GetInfo(context.Background(), "sb1"); return err }
	create := func(c *Client) error { _, err := c.Create(context.Background(), CreateParams{}); return err }
	pause := func(c *Client) error { return c.Pause(context.Background(), "sb1") }
	ok := reply{200, `{"sandboxID":"sb1","templateID":"base","state":"running"}`, nil}
	tests := []struct {
		name     string
		call     func(*Client) error
		replies  []reply
		wantHits int32
		wantErr  error
	}{
		{"503 502 then ok", getInfo, []reply{{503, "", nil}, {502, "bad gateway", nil}, ok}, 3, nil},
		{"504 then ok", getInfo, []reply{{504, "", nil}, ok}, 2, nil},
		{"429 retry-after 0", getInfo, []reply{{429, "", map[string]string{"Retry-After": "0"}}, ok}, 2, nil},
		{"attempts exhausted", getInfo, []reply{{503, "", nil}}, 3, ErrUnavailable},
		{"404 not retried", getInfo, []reply{{404, `{"code":404,"message":"x"}`, nil}}, 1, ErrSandboxNotFound},
		{"create never resent on 503", create, []reply{{503, "", nil}, {201, sandboxJSON, nil}}, 1, ErrUnavailable},
		{"create resent on 429", create, []reply{{429, "", nil}, {201, sandboxJSON, nil}}, 2, nil},
		{"pause never resent", pause, []reply{{502, "", nil}, {204, "", nil}}, 1, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{replies: tt.replies}
			srv := fakeServer(t, s)
			err := tt.call(newTestClient(t, testConfig(srv.URL, "")))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := s.hits.Load(); got != tt.wantHits {
				t.Errorf("hits = %d, want %d", got, tt.wantHits)
			}
		})
	}
}

func TestRetryAfterBeyondDeadlineFailsFast(t *testing.T) {
	s := &scripted{replies: []reply{{429, `{"code":429,"message":"later"}`, map[string]string{"Retry-After": "3600"}}}}
	srv := fakeServer(t, s)
	c := newTestClient(t, testConfig(srv.URL, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Kill(ctx, "sb1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrRateLimited) || e.RetryAfter != time.Hour {
		t.Fatalf("err = %v", err)
	}
	if s.hits.Load() != 1 || ctx.Err() != nil {
		t.Errorf("hits = %d, ctx err = %v: the client waited instead of reporting", s.hits.Load(), ctx.Err())
	}
}

func TestRetryOnConnectionReset(t *testing.T) {
	checkLeaks(t)
	var hits atomic.Int32
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // drop the connection without a response
			}
			return
		}
		_, _ = io.WriteString(w, `[]`)
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	if _, err := c.Metrics(context.Background(), "sb1", MetricsParams{}); err != nil {
		t.Fatalf("metrics after reset: %v", err)
	}
	if hits.Load() != 2 {
		t.Errorf("hits = %d, want 2", hits.Load())
	}
}

// roundTripFunc lets a test observe the transport.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCancelDuringBackoff(t *testing.T) {
	checkLeaks(t)
	s := &scripted{replies: []reply{{503, "", nil}}}
	srv := fakeServer(t, s)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	responded := make(chan struct{}, 10)
	cfg := testConfig(srv.URL, "")
	cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		responded <- struct{}{}
		return resp, err
	})}
	cfg.Retry = RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}
	c := newTestClient(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Kill(ctx, "sb1") }()
	<-responded // the first attempt has its 503; the client now backs off for an hour
	cancel()
	err := <-done
	if !errors.Is(err, ErrUnavailable) || s.hits.Load() != 1 {
		t.Fatalf("err = %v hits = %d", err, s.hits.Load())
	}
}

func TestCancelInFlight(t *testing.T) {
	checkLeaks(t)
	entered := make(chan struct{})
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err := c.GetInfo(ctx, "sb1")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrTimeout) {
		t.Errorf("a cancellation is not a timeout: %v", err)
	}
}

func TestRequestTimeout(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	cfg := testConfig(srv.URL, "")
	cfg.RequestTimeout = 50 * time.Millisecond
	cfg.Retry.MaxAttempts = 1
	_, err := newTestClient(t, cfg).GetInfo(context.Background(), "sb1")
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestListPagination(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e"}
	var queries []url.Values
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		queries = append(queries, q)
		start := 0
		if tok := q.Get("nextToken"); tok != "" {
			start = int(tok[0] - '0')
		}
		end := min(start+2, len(all))
		if end < len(all) {
			w.Header().Set("X-Next-Token", string(rune('0'+end)))
		}
		items := []SandboxInfo{}
		for _, id := range all[start:end] {
			items = append(items, SandboxInfo{SandboxID: id, State: StateRunning})
		}
		_ = json.NewEncoder(w).Encode(items)
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	p := ListParams{States: []SandboxState{StateRunning, StatePaused}, Template: "base", Limit: 2}
	var got []string
	for sb, err := range c.List(context.Background(), p) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sb.SandboxID)
	}
	if !reflect.DeepEqual(got, all) || len(queries) != 3 {
		t.Fatalf("got %v in %d requests", got, len(queries))
	}
	if q := queries[0]; q.Get("state") != "running,paused" || q.Get("template") != "base" || q.Get("limit") != "2" {
		t.Errorf("query = %v", q)
	}
	queries = nil
	n := 0
	for _, err := range c.List(context.Background(), p) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if len(queries) != 2 {
		t.Errorf("breaking after 3 items fetched %d pages, want 2", len(queries))
	}
}

func TestListYieldsError(t *testing.T) {
	srv := fakeServer(t, &scripted{replies: []reply{{401, `{"code":401,"message":"bad key"}`, nil}}})
	c := newTestClient(t, testConfig(srv.URL, ""))
	var errs int
	for _, err := range c.List(context.Background(), ListParams{}) {
		if !errors.Is(err, ErrAuthentication) {
			t.Fatalf("err = %v", err)
		}
		errs++
	}
	if errs != 1 {
		t.Errorf("yielded %d errors", errs)
	}
}

// TestMetadataFilterEncoding decodes the filter exactly as E2B's API does:
// the query layer, then the whole value, then each key and value.
func TestMetadataFilterEncoding(t *testing.T) {
	md := map[string]string{"user": "a b", "x&y=z": "100%", "ünï": "ça+va", "session": "s-1/2"}
	var raw string
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw = r.URL.Query().Get("metadata")
		_, _ = io.WriteString(w, "[]")
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	if _, err := c.ListPage(context.Background(), ListParams{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	whole, err := url.QueryUnescape(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, pair := range strings.Split(whole, "&") {
		k, v, _ := strings.Cut(pair, "=")
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			t.Fatalf("pair %q: %v %v", pair, err1, err2)
		}
		got[dk] = dv
	}
	if !reflect.DeepEqual(got, md) {
		t.Errorf("decoded %v, want %v (raw %q)", got, md, raw)
	}
}

func TestJSURIComponent(t *testing.T) {
	// Expected values are what JavaScript's encodeURIComponent returns.
	tests := map[string]string{
		"a b&c=d/é!*'()~": "a%20b%26c%3Dd%2F%C3%A9!*'()~",
		"plain-_.":        "plain-_.",
		"100%+":           "100%25%2B",
	}
	for in, want := range tests {
		if got := jsURIComponent(in); got != want {
			t.Errorf("jsURIComponent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSetTimeoutMetricsGetInfo(t *testing.T) {
	var bodies []string
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		switch {
		case strings.HasSuffix(r.URL.Path, "/metrics"):
			_, _ = io.WriteString(w, `[{"timestampUnix":1700000000,"cpuCount":2,"cpuUsedPct":12.5,"memUsed":1024,"memTotal":4096,"diskUsed":1,"diskTotal":2}]`)
		case r.Method == http.MethodGet:
			_, _ = io.WriteString(w, `{"sandboxID":"sb1","templateID":"base","state":"paused","cpuCount":2,"memoryMB":512,"metadata":{"k":"v"},"startedAt":"2026-01-02T03:04:05Z","endAt":"2026-01-02T03:09:05Z","envdVersion":"0.6.13"}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	c := newTestClient(t, testConfig(srv.URL, ""))
	ctx := context.Background()
	if err := c.SetTimeout(ctx, "sb1", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ms, err := c.Metrics(ctx, "sb1", MetricsParams{Start: time.Unix(100, 0), End: time.Unix(200, 0)})
	if err != nil || len(ms) != 1 || ms[0].CPUUsedPct != 12.5 || ms[0].MemTotal != 4096 {
		t.Fatalf("metrics = %+v, %v", ms, err)
	}
	info, err := c.GetInfo(ctx, "sb1")
	if err != nil || info.State != StatePaused || info.Metadata["k"] != "v" || info.MemoryMB != 512 ||
		!info.EndAt.Equal(time.Date(2026, 1, 2, 3, 9, 5, 0, time.UTC)) {
		t.Fatalf("info = %+v, %v", info, err)
	}
	want := []string{
		`POST /sandboxes/sb1/timeout {"timeout":2}`,
		`GET /sandboxes/sb1/metrics?end=200&start=100 `,
		`GET /sandboxes/sb1 `,
	}
	if !reflect.DeepEqual(bodies, want) {
		t.Errorf("requests:\n%q\nwant\n%q", bodies, want)
	}
}

func TestDebugModeSkipsAPI(t *testing.T) {
	s := &scripted{replies: []reply{{500, "", nil}}}
	srv := fakeServer(t, s)
	cfg := testConfig(srv.URL, "")
	cfg.Debug = true
	c := newTestClient(t, cfg)
	ctx := context.Background()
	sb, err := c.Create(ctx, CreateParams{})
	if err != nil || sb.ID != "debug_sandbox_id" || sb.EnvdVersion != "99.99.99" {
		t.Fatalf("create = %+v, %v", sb, err)
	}
	if sb.envd.base != "http://localhost:49983" || sb.interp.base != "http://localhost:49999" {
		t.Errorf("debug urls %s %s", sb.envd.base, sb.interp.base)
	}
	if err := sb.Kill(ctx); err != nil {
		t.Error(err)
	}
	if err := sb.SetTimeout(ctx, time.Minute); err != nil {
		t.Error(err)
	}
	if _, err := sb.Metrics(ctx, MetricsParams{}); err != nil {
		t.Error(err)
	}
	if sb2, err := c.Connect(ctx, "other", ConnectParams{}); err != nil || sb2.ID != "other" {
		t.Errorf("connect = %v", err)
	}
	if s.hits.Load() != 0 {
		t.Errorf("debug mode called the API %d times", s.hits.Load())
	}
}

func TestListStopsOnRepeatedToken(t *testing.T) {
	s := &scripted{replies: []reply{{200, `[{"sandboxID":"a"}]`, map[string]string{"X-Next-Token": "same"}}}}
	srv := fakeServer(t, s)
	c := newTestClient(t, testConfig(srv.URL, ""))
	n := 0
	for _, err := range c.List(context.Background(), ListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n > 10 {
			t.Fatal("a server repeating its cursor made List loop")
		}
	}
	if s.hits.Load() != 2 {
		t.Errorf("hits = %d, want 2", s.hits.Load())
	}
}
