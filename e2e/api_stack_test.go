package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/internal/faultproxy"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/thirdparty"
)

// stack is the whole service as `sessionbox serve` runs it (pkg/local):
// the API over the real Manager, the DynamoDB store on the emulator, the
// local E2B runtime through the E2B client, the S3 adapter on the S3
// stand-in, the in-process bus with its worker and the reaper.
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
	// stackID tags every sandbox the service starts.
	stackID string
	// fault, when the stack has one, sits in front of E2B's control plane
	// to fail or stall it; dbFault in front of DynamoDB.
	fault, dbFault *faultproxy.Proxy
}

// testE2BKey is what the service presents to a runtime started here.
const testE2BKey = "e2b_0123456789abcdef"

func newStack(t testing.TB) *stack { return newStackWith(t, 0, session.Config{}) }

// newStackWith builds a stack whose Manager is configured by cfg. With
// e2bTimeout set, the runtime is started here and the service reaches it as
// an external E2B through s.fault, giving up on a call after e2bTimeout;
// without, local mode starts its own runtime, exactly as serve does, unless
// the tests target real E2B (e2btest.Env), which the service then uses.
func newStackWith(t testing.TB, e2bTimeout time.Duration, cfg session.Config) *stack {
	t.Helper()
	return buildStack(t, e2bTimeout, cfg, awsParts{})
}

// awsParts, when set, replace local mode's in-process DynamoDB and S3, and
// its URL fetcher.
type awsParts struct {
	db      *dynamodb.Client
	s3      *s3.Client
	fetcher session.URLFetcher
}

// newThirdPartyStack is the stack on stand-ins nobody here wrote: dynalite
// for DynamoDB and versitygw, which checks signatures as S3 does, for S3.
func newThirdPartyStack(t *testing.T) *stack {
	t.Helper()
	gw := thirdparty.VersityGW(t).Client()
	return buildStack(t, 0, session.Config{}, awsParts{db: localaws.DynamoDBClient(thirdparty.Dynalite(t)), s3: gw})
}

func buildStack(t testing.TB, e2bTimeout time.Duration, cfg session.Config, parts awsParts) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, logger := newBareStack(t)
	var e2bCfg e2b.Config
	cloud, isCloud, err := e2btest.Cloud()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case isCloud && e2bTimeout == 0:
		// Real E2B, as a deployment reaches it, shared with others: the
		// stack's sandboxes carry a stack id of their own and are killed
		// at the end.
		e2bCfg = cloud
		s.sandboxes = sandboxesFor(t, cloud)
		cfg.StackID = e2btest.StackID(t)
		e2btest.KillTaggedAtCleanup(t, cloud, map[string]string{session.MetaStack: cfg.StackID})
	case e2bTimeout > 0:
		rt := startRuntime(t)
		s.fault = faultproxy.New(t, rt.APIURL())
		e2bCfg = e2b.Config{APIKey: testE2BKey, APIURL: s.fault.URL, SandboxURL: rt.SandboxURL(), RequestTimeout: e2bTimeout}
		s.sandboxes = sandboxesOf(t, rt)
	}
	dataDir := t.TempDir()
	s.other = seedOtherTenant(ctx, t, local.Config{DataDir: dataDir, E2B: e2bCfg, Logger: logger, DynamoDB: parts.db, S3: parts.s3})
	keys := newKeys(t, "alice", "bob")
	s.alice, s.bob = keys[0].Secret, keys[1].Secret
	// The runtime local mode starts takes testE2BKey, so s.sandboxes can
	// reach it too.
	svc, err := local.Start(ctx, local.Config{DataDir: dataDir, Tenant: "t1", Keys: keys, Session: cfg, E2B: e2bCfg, Logger: logger,
		DynamoDB: parts.db, S3: parts.s3, Runtime: withAgent(e2blocal.Config{APIKey: testE2BKey,
			// A template of the caller's own, as E2B users bring them; the
			// validation test starts one whose name is at the limits.
			Templates: map[string]string{atLimitTemplate: "code-interpreter-v1"}}), Fetcher: parts.fetcher})
	if err != nil {
		t.Fatalf("start local mode: %v", err)
	}
	s.stackID = svc.Manager.Config().StackID
	t.Cleanup(func() { _ = svc.Close() })
	if svc.Runtime != nil {
		s.sandboxes = sandboxesOf(t, svc.Runtime)
	}
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	s.url, s.client = svc.URL, &http.Client{Transport: transport}
	return s
}

// newBareStack is a stack with nothing behind it yet, and the logger the
// service logs to: a failing test shows the logs.
func newBareStack(t testing.TB) (*stack, *slog.Logger) {
	s := &stack{t: t, logs: &lockedWriter{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", s.logs.String())
		}
	})
	return s, slog.New(slog.NewTextHandler(s.logs, nil))
}

// newKeys makes a key for each principal.
func newKeys(t testing.TB, principals ...string) []local.Key {
	t.Helper()
	var keys []local.Key
	for _, p := range principals {
		k, err := local.NewKey(p)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// seedOtherTenant stores a key of principal alice of tenant t2 in the
// service's table and returns it. local.Config puts every key in one
// tenant, so a first start under tenant t2 stores it; the next start, under
// t1, leaves other tenants' keys alone.
func seedOtherTenant(ctx context.Context, t testing.TB, cfg local.Config) string {
	t.Helper()
	k := newKeys(t, "alice")[0]
	cfg.Tenant, cfg.Keys = "t2", []local.Key{k}
	if cfg.E2B.APIKey == "" {
		// No sandbox is started: any E2B endpoint spares starting a runtime.
		cfg.E2B = e2b.Config{APIKey: testE2BKey, APIURL: "http://127.0.0.1:1", SandboxURL: "http://127.0.0.1:1"}
	}
	svc, err := local.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("seed tenant t2: %v", err)
	}
	if err := svc.Close(); err != nil {
		t.Fatalf("seed tenant t2: close: %v", err)
	}
	return k.Secret
}

// startRuntime starts a local E2B runtime for the test.
func startRuntime(t testing.TB) *e2blocal.Runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := e2blocal.Start(ctx, withAgent(e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()}))
	if err != nil {
		t.Fatalf("start local runtime: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// sandboxesOf is a client of rt of its own, past any fault proxy.
func sandboxesOf(t testing.TB, rt *e2blocal.Runtime) *sandboxes.E2B {
	t.Helper()
	return sandboxesFor(t, e2b.Config{APIKey: testE2BKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL()})
}

// sandboxesFor is a client of the E2B cfg points at.
func sandboxesFor(t testing.TB, cfg e2b.Config) *sandboxes.E2B {
	t.Helper()
	c, err := e2b.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return sandboxes.New(c)
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
		session.MetaStack: s.stackID, session.MetaTenant: "t1", session.MetaPrincipal: principal, session.MetaSession: sid})
	if err != nil {
		s.t.Fatalf("list sandboxes: %v", err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	return ids
}
