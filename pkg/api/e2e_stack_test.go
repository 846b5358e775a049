package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/bus"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// TestMain lets the local runtime re-execute this test binary as the
// in-sandbox agent.
func TestMain(m *testing.M) {
	e2blocal.RunAgentIfRequested()
	os.Exit(m.Run())
}

// stack is the whole service as local mode runs it: the API over the real
// Manager, the DynamoDB store on the in-process emulator, the local E2B
// runtime through the E2B client, the S3 adapter on the on-disk S3
// stand-in, and the in-process bus with its worker.
type stack struct {
	t      testing.TB
	url    string
	alice  string // t1/alice
	bob    string // t1/bob
	other  string // t2/alice: same principal name, another tenant
	client *http.Client
	logs   *lockedWriter
	// sandboxes reaches the runtime behind the service's back, to count
	// and kill sandboxes.
	sandboxes *sandboxes.E2B
	// fault sits in front of E2B's control plane to fail or stall it;
	// dbFault in front of DynamoDB.
	fault, dbFault *faultProxy
}

// faultProxy passes requests on, or answers them with an injected status,
// or holds them, as an E2B outage would.
type faultProxy struct {
	next    http.Handler
	status  atomic.Int32
	hangFor atomic.Int64
	// With target set, only DynamoDB calls of that operation fail, and
	// only after pass of them went through.
	target atomic.Value // string
	pass   atomic.Int32
}

// failOperation fails DynamoDB's op (e.g. "PutItem") with status after
// pass calls of it succeed; status 0 ends the fault.
func (f *faultProxy) failOperation(op string, pass int32, status int32) {
	f.target.Store(op)
	f.pass.Store(pass)
	f.status.Store(status)
}

func (f *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if op, _ := f.target.Load().(string); op != "" && f.status.Load() != 0 {
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+op) || f.pass.Add(-1) >= 0 {
			f.next.ServeHTTP(w, r)
			return
		}
	}
	if d := time.Duration(f.hangFor.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if s := int(f.status.Load()); s != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s)
		_, _ = fmt.Fprintf(w, `{"code":%d,"message":"injected"}`, s)
		return
	}
	f.next.ServeHTTP(w, r)
}

func newStack(t testing.TB) *stack { return newStackWith(t, 30*time.Second, session.Config{}) }

// newStackWith builds a stack whose E2B client gives up on a call after
// e2bTimeout, with the Manager configured by cfg.
func newStackWith(t testing.TB, e2bTimeout time.Duration, cfg session.Config) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := &lockedWriter{}
	logger := slog.New(slog.NewTextHandler(logs, nil))

	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start local runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	target, err := url.Parse(rt.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	fault := &faultProxy{next: httputil.NewSingleHostReverseProxy(target)}
	control := httptest.NewServer(fault)
	t.Cleanup(control.Close)
	e2bc, err := e2b.New(e2b.Config{APIKey: "e2b_0123456789abcdef", APIURL: control.URL, SandboxURL: rt.SandboxURL(), RequestTimeout: e2bTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e2bc.Close() })

	endpoint, stop, err := localaws.StartDynamoDB(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	dynamoURL, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	dbFault := &faultProxy{next: httputil.NewSingleHostReverseProxy(dynamoURL)}
	dynamo := httptest.NewServer(dbFault)
	t.Cleanup(dynamo.Close)
	db := localaws.DynamoDBClient(dynamo.URL)
	if err := store.CreateTable(ctx, db, "sessionbox"); err != nil {
		t.Fatal(err)
	}
	st := store.New(db, "sessionbox")

	s3Endpoint, stopS3, err := localaws.StartS3(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopS3)
	s3c := localaws.S3Client(s3Endpoint)
	if err := localaws.EnsureBucket(ctx, s3c, "transfers"); err != nil {
		t.Fatal(err)
	}

	b := bus.NewLocal(2, nil, logger)
	t.Cleanup(func() { _ = b.Close() })
	sbx := sandboxes.New(e2bc)
	cfg.StackID = "api-e2e"
	mgr, err := session.NewManager(cfg, session.Deps{
		Store: st, Sandboxes: sbx, Bus: b, Blobs: blob.New(s3c, "transfers"), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	b.SetHandler(func(ctx context.Context, ev session.RunRequested) error {
		_, err := mgr.ProcessRun(ctx, ev)
		return err
	})

	s := &stack{t: t, logs: logs, sandboxes: sbx, fault: fault, dbFault: dbFault}
	for _, p := range []struct {
		tenant, principal string
		key               *string
	}{{"t1", "alice", &s.alice}, {"t1", "bob", &s.bob}, {"t2", "alice", &s.other}} {
		plain, k, err := session.NewAPIKey(p.tenant, p.principal, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		*p.key = plain
	}
	srv := httptest.NewServer(api.New(mgr, api.WithLogger(logger)))
	t.Cleanup(srv.Close)
	s.url, s.client = srv.URL, srv.Client()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", logs.String())
		}
	})
	return s
}

// req sends one request as the holder of key ("" for none).
func (s *stack) req(key, method, path string, body io.Reader, headers ...string) (*http.Response, []byte) {
	s.t.Helper()
	r, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil && method != http.MethodPut {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.client.Do(r)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp, b
}

// json sends v as JSON and decodes a 2xx answer into out, failing the
// test on any other status.
func (s *stack) json(key, method, path string, v any, out any, headers ...string) *http.Response {
	s.t.Helper()
	var body io.Reader
	if v != nil {
		b, _ := json.Marshal(v)
		body = bytes.NewReader(b)
	}
	resp, b := s.req(key, method, path, body, headers...)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("%s %s: status %d: %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp
}

// problem expects a problem+json answer of status.
func (s *stack) problem(status int, resp *http.Response, body []byte) map[string]any {
	s.t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/problem+json" {
		s.t.Fatalf("status %d (%s), want %d problem: %s", resp.StatusCode, resp.Header.Get("Content-Type"), status, body)
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil || !strings.HasPrefix(p["type"].(string), "https://sessionbox.dev/problems/") {
		s.t.Fatalf("bad problem %s", body)
	}
	return p
}

type execResult struct {
	Success bool   `json:"success"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Results []struct {
		Text         string `json:"text"`
		IsMainResult bool   `json:"isMainResult"`
	} `json:"results"`
	Error *struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"error"`
	Restarted bool `json:"restarted"`
}

func (r execResult) text() string {
	for _, x := range r.Results {
		if x.IsMainResult {
			return x.Text
		}
	}
	return ""
}

func (s *stack) exec(key, sid, code string) execResult {
	s.t.Helper()
	var r execResult
	s.json(key, "POST", "/v1/sessions/"+sid+"/execute", map[string]any{"code": code}, &r)
	return r
}

type sessionView struct {
	SessionID string `json:"sessionId"`
	State     string `json:"state"`
	SandboxID string `json:"sandboxId"`
}

// lockedWriter collects logs written by concurrent handlers.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sessionSandboxes lists the runtime's sandboxes of one session.
func (s *stack) sessionSandboxes(principal, sid string) []string {
	s.t.Helper()
	infos, err := s.sandboxes.List(context.Background(), map[string]string{
		session.MetaTenant: "t1", session.MetaPrincipal: principal, session.MetaSession: sid})
	if err != nil {
		s.t.Fatalf("list sandboxes: %v", err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	return ids
}
