package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// slowStartSandboxes is a provider whose create takes createFor and then
// fails with createErr (the local runtime's answer on an overloaded host,
// as pkg/sandboxes reports it) or succeeds; its execute blocks until
// cellDone is closed, then fails with cellErr or succeeds. Methods the
// Manager does not call on these paths are the embedded nil interface's.
type slowStartSandboxes struct {
	session.Sandboxes
	createFor time.Duration
	createErr error
	cellDone  chan struct{}
	cellErr   error
	created   atomic.Int32
}

func (f *slowStartSandboxes) Create(ctx context.Context, spec session.SandboxSpec) (session.SandboxInfo, error) {
	// The create outlasts the keepalive's first tick, as a spawn on a host
	// at load 125 did (12 s against 10 s).
	select {
	case <-time.After(f.createFor):
	case <-ctx.Done():
		return session.SandboxInfo{}, ctx.Err()
	}
	if f.createErr != nil {
		return session.SandboxInfo{}, f.createErr
	}
	n := f.created.Add(1)
	return session.SandboxInfo{ID: fmt.Sprintf("sbx-%d", n), Metadata: spec.Metadata, StartedAt: time.Now()}, nil
}

func (f *slowStartSandboxes) List(context.Context, map[string]string) ([]session.SandboxInfo, error) {
	return nil, nil
}

func (f *slowStartSandboxes) Kill(context.Context, string) error { return nil }

// Get fails: after a failed cell the Manager asks whether the sandbox
// died, and an unanswered question leaves the cell's own failure.
func (f *slowStartSandboxes) Get(context.Context, string) (session.SandboxInfo, error) {
	return session.SandboxInfo{}, errors.New("provider unreachable")
}

func (f *slowStartSandboxes) SetTimeout(context.Context, string, time.Duration) error { return nil }

func (f *slowStartSandboxes) Execute(ctx context.Context, _ string, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	select {
	case <-f.cellDone:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.cellErr != nil {
		return nil, f.cellErr
	}
	onEvent(session.Event{Stdout: "done\n"})
	return &session.ExecResult{Success: true, Stdout: "done\n"}, nil
}

// newRealManagerServer serves the API over a real Manager on the real
// DynamoDB store (the in-process emulator), with sbx as the provider.
func newRealManagerServer(t *testing.T, sbx session.Sandboxes, first, hold time.Duration) *httptest.Server {
	t.Helper()
	ctx := t.Context()
	ddbURL, stopDDB, err := localaws.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDDB)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	ddb := localaws.DynamoDBClient(ddbURL, func(o *dynamodb.Options) { o.HTTPClient = hc })
	if err := store.CreateTable(ctx, ddb, "sessions"); err != nil {
		t.Fatal(err)
	}
	mgr, err := session.NewManager(session.Config{Tenant: "acme", StackID: "stack-bp", DisableWorkspaces: true},
		session.Deps{Store: store.New(ddb, "sessions"), Sandboxes: sbx, Logger: discardLogger(), Fetcher: refusingFetcher{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(mgr, WithLogger(discardLogger()), WithIdentity(func(*http.Request) (string, string, bool) {
		return "acme", "alice", true
	}))
	srv.keepAliveFirst, srv.keepAliveEvery, srv.startHold = first, 20*time.Millisecond, hold
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

// TestStartOverloadIsBackpressure: a start that fails for overload after
// the keepalive's first tick would have started the response is still
// answered 429 with Retry-After (not a 200 carrying a problem), in JSON
// and stream mode; a start that succeeds late and then a long cell gets the
// 200 and keepalives as before, and a cell that runs long and then fails
// stays the documented 200 with a Problem body.
func TestStartOverloadIsBackpressure(t *testing.T) {
	t.Parallel()
	const first = 10 * time.Millisecond
	overload := &session.Error{Kind: session.ErrLimit, RetryAfter: 5 * time.Second,
		Detail: "create sandbox: the sandbox provider is overloaded; try again in 5 s",
		Err:    errors.New("503: the host is too busy to start a sandbox now")}
	cellFailed := session.Errorf(session.ErrUnavailable, "the sandbox stopped answering")
	for _, c := range []struct {
		name      string
		path      string
		accept    string
		createErr error
		cellErr   error
		want      int // the status; 200 with a late problem when lateStatus is set
		late      int
	}{
		{"JSON: overloaded start", "/v1/sessions/s1/execute", "application/json", overload, nil, 429, 0},
		{"stream: overloaded start", "/v1/sessions/s1/execute", contentTypeNDJSON, overload, nil, 429, 0},
		{"one-shot: overloaded start", "/v1/execute", "application/json", overload, nil, 429, 0},
		{"upload-urls: overloaded start", "/v1/sessions/s1/files/upload-urls", "application/json", overload, nil, 429, 0},
		{"JSON: late start, long cell", "/v1/sessions/s1/execute", "application/json", nil, nil, 200, 0},
		{"JSON: late start, long cell that fails", "/v1/sessions/s1/execute", "application/json", nil, cellFailed, 200, 502},
		{"stream: late start, long cell", "/v1/sessions/s1/execute", contentTypeNDJSON, nil, nil, 200, 0},
		{"one-shot: late start, long cell", "/v1/execute", "application/json", nil, nil, 200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sbx := &slowStartSandboxes{createFor: 20 * first, createErr: c.createErr, cellDone: make(chan struct{}), cellErr: c.cellErr}
			ts := newRealManagerServer(t, sbx, first, time.Minute)
			body := `{"code":"long()"}`
			if strings.HasSuffix(c.path, "/upload-urls") {
				body = `{"urls":["https://cdn.example.com/a.csv"]}`
			}
			req, err := http.NewRequestWithContext(t.Context(), "POST", ts.URL+c.path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", c.accept)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.want {
				close(sbx.cellDone)
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if c.want != 200 {
				p := checkProblem(t, resp, readAll(t, resp), c.want)
				if resp.Header.Get("Retry-After") != "5" || !strings.Contains(p.Detail, "overloaded") {
					t.Fatalf("Retry-After %q, problem %+v", resp.Header.Get("Retry-After"), p)
				}
				return
			}
			// The 200 came while the cell still runs: keepalives, then the end.
			br := bufio.NewReader(resp.Body)
			checkKeepAlive(t, br, c.accept)
			close(sbx.cellDone)
			checkEnd(t, br, c.accept, c.late)
		})
	}
}

// checkKeepAlive reads what a running call sends: spaces in JSON mode, the
// start line and keepalives in a stream.
func checkKeepAlive(t *testing.T, br *bufio.Reader, accept string) {
	t.Helper()
	if accept != contentTypeNDJSON {
		for range 2 {
			if b, err := br.ReadByte(); err != nil || b != ' ' {
				t.Fatalf("read %q %v, want a space", b, err)
			}
		}
		return
	}
	for _, want := range []string{lineStart, lineKeepalive} {
		line, err := br.ReadBytes('\n')
		var l streamLine
		if err != nil || json.Unmarshal(line, &l) != nil || l.Type != want {
			t.Fatalf("line %q %v, want %s", line, err, want)
		}
	}
}

// checkEnd reads the rest of the body: the result, or the late problem
// with status late.
func checkEnd(t *testing.T, br *bufio.Reader, accept string, late int) {
	t.Helper()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if accept == contentTypeNDJSON {
		lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
		if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"done"`) {
			t.Fatalf("stream ends with %s", last)
		}
		return
	}
	var v map[string]any
	if err := json.Unmarshal(rest, &v); err != nil {
		t.Fatalf("body is not one JSON value: %v: %q", err, rest)
	}
	if late != 0 {
		if v["status"] != float64(late) || !strings.HasPrefix(v["type"].(string), "https://sessionbox.dev/problems/") {
			t.Fatalf("late problem %v, want status %d", v, late)
		}
		return
	}
	if v["success"] != true || v["stdout"] != "done\n" {
		t.Fatalf("result %v", v)
	}
}

// TestHeldTicking times the first tick, the one that starts a response:
// at first when the call reached its sandbox by then, at once when it
// reaches it later, at hold when it never does; and never after stop.
func TestHeldTicking(t *testing.T) {
	t.Parallel()
	const first, hold, every = 20 * time.Millisecond, 300 * time.Millisecond, time.Hour
	for _, c := range []struct {
		name     string
		reachAt  time.Duration // -1: never
		min, max time.Duration // when the first tick may come
	}{
		{"reached before first", 0, first, hold - 50*time.Millisecond},
		{"reached after first", 100 * time.Millisecond, 100 * time.Millisecond, hold - 50*time.Millisecond},
		{"never reached", -1, hold, 10 * hold},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ticks := make(chan time.Duration, 2)
			start := time.Now()
			reached, stop := heldTicking(first, every, hold, func() { ticks <- time.Since(start) })
			defer stop()
			if c.reachAt >= 0 {
				time.AfterFunc(c.reachAt, reached)
			}
			select {
			case at := <-ticks:
				if at < c.min || at > c.max {
					t.Fatalf("first tick after %v, want within [%v, %v]", at, c.min, c.max)
				}
			case <-time.After(10 * hold):
				t.Fatal("no tick")
			}
			stop()
			reached()
			select {
			case at := <-ticks:
				t.Fatalf("a tick after stop, at %v", at)
			case <-time.After(2 * first):
			}
		})
	}
}

// refusingFetcher is the URL fetcher of a Manager whose uploads never get
// as far as a fetch.
type refusingFetcher struct{}

func (refusingFetcher) Fetch(context.Context, string) (*session.FetchedURL, error) {
	return nil, session.Errorf(session.ErrInvalid, "no fetches here")
}
