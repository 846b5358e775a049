package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// reaperRig is the reaper function on a fake clock, with a switch that
// makes the E2B control plane fail kills.
type reaperRig struct {
	*lambdaStack
	clock     *testclock.Clock
	env       *sessionenv.Env
	failKills atomic.Bool
}

func newReaperRig(t *testing.T) *reaperRig {
	r := &reaperRig{lambdaStack: newLambdaStack(t), clock: testclock.New(time.Now())}
	target, err := url.Parse(r.e2bURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.failKills.Load() && req.Method == http.MethodDelete && strings.HasPrefix(req.URL.Path, "/sandboxes/") {
			http.Error(w, `{"code":500,"message":"injected failure"}`, http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("E2B_API_URL", srv.URL)
	r.env, _ = r.lambdaStack.env(lambdaenv.Reaper, lambdaenv.WithClock(r.clock))
	return r
}

// emf is the reaper's metrics line.
type emf struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	Tenant                                    string `json:"tenant"`
	Paused, Killed, Recycled, Orphans, Errors int
}

// tick runs the reaper function once on the scheduler sample.
func (r *reaperRig) tick(t *testing.T) (emf, error) {
	t.Helper()
	var out bytes.Buffer
	err := r.env.ReaperWith(r.env.Manager, &out).Handle(lambdaCtx(t, "tick"), readEvent(t, "reaper/scheduler-tick.json"))
	return parseEMF(t, out.Bytes()), err
}

func parseEMF(t *testing.T, line []byte) emf {
	t.Helper()
	if bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("want one EMF line, got %q", line)
	}
	var m emf
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("EMF line %q: %v", line, err)
	}
	d := m.AWS.CloudWatchMetrics
	if len(d) != 1 || d[0].Namespace != "sessionbox" || len(d[0].Dimensions) != 1 || d[0].Dimensions[0][0] != "tenant" ||
		len(d[0].Metrics) != 5 || m.Tenant != tenant || m.AWS.Timestamp == 0 {
		t.Fatalf("EMF envelope %s", line)
	}
	return m
}

func (r *reaperRig) start(t *testing.T, id string, idleSecs int, pause bool) session.Key {
	t.Helper()
	key := session.Key{Tenant: tenant, Principal: "alice", SessionID: id}
	if _, err := r.env.Manager.Start(lambdaCtx(t, "start"), key, session.StartOptions{
		Type: session.TypeCodeInterpreter, IdleTimeoutSecs: idleSecs, Pause: pause}); err != nil {
		t.Fatal(err)
	}
	return key
}

func (r *reaperRig) state(t *testing.T, key session.Key) (session.State, string) {
	t.Helper()
	s, err := r.store.GetSession(lambdaCtx(t, "get"), key)
	if err != nil {
		t.Fatal(err)
	}
	return s.State, s.SandboxID
}

// sandboxState is what the provider says of a sandbox: "gone" once killed.
func (r *reaperRig) sandboxState(t *testing.T, id string) string {
	t.Helper()
	info, err := r.env.Sandboxes.Get(lambdaCtx(t, "get"), id)
	if errors.Is(err, session.ErrSandboxGone) || errors.Is(err, session.ErrNotFound) {
		return "gone"
	} else if err != nil {
		t.Fatal(err)
	}
	return string(info.State)
}

func want(t *testing.T, got emf, paused, killed, orphans, errs int) {
	t.Helper()
	if got.Paused != paused || got.Killed != killed || got.Orphans != orphans || got.Errors != errs {
		t.Fatalf("tick counted paused %d killed %d orphans %d errors %d, want %d %d %d %d",
			got.Paused, got.Killed, got.Orphans, got.Errors, paused, killed, orphans, errs)
	}
}

// TestReaperDueNotDueStopped: only the idle session is killed; one with
// time left and one already stopped are left alone.
func TestReaperDueNotDueStopped(t *testing.T) {
	r := newReaperRig(t)
	idle := r.start(t, "idle", 60, false)
	busy := r.start(t, "busy", 600, false)
	stopped := r.start(t, "stopped", 60, false)
	if _, err := r.env.Manager.Stop(lambdaCtx(t, "stop"), stopped); err != nil {
		t.Fatal(err)
	}
	m, err := r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 0, 0, 0) // nothing due yet

	r.clock.Advance(2 * time.Minute)
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 1, 0, 0)
	st, sbx := r.state(t, idle)
	if st != session.StateStopped || r.sandboxState(t, sbx) != "gone" {
		t.Fatalf("idle session %s, sandbox %s", st, r.sandboxState(t, sbx))
	}
	if st, sbx := r.state(t, busy); st != session.StateRunning || r.sandboxState(t, sbx) != "running" {
		t.Fatalf("busy session %s", st)
	}
	if st, _ := r.state(t, stopped); st != session.StateStopped {
		t.Fatalf("stopped session %s", st)
	}
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 0, 0, 0)
}

// TestReaperPausesThenKillsAtLifetime: a session that asked for pausing
// is paused when idle, left paused, and killed when its lifetime ends.
func TestReaperPausesThenKillsAtLifetime(t *testing.T) {
	r := newReaperRig(t)
	key := r.start(t, "pausing", 60, true)
	r.clock.Advance(2 * time.Minute)
	m, err := r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 1, 0, 0, 0)
	st, sbx := r.state(t, key)
	if st != session.StatePaused || r.sandboxState(t, sbx) != "paused" {
		t.Fatalf("session %s, sandbox %s", st, r.sandboxState(t, sbx))
	}
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 0, 0, 0)
	r.clock.Advance(2 * time.Hour)
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 1, 0, 0)
	if st, _ := r.state(t, key); st != session.StateStopped || r.sandboxState(t, sbx) != "gone" {
		t.Fatalf("session %s after its lifetime", st)
	}
}

// TestReaperOverlappingTicks: two ticks at once kill each due session once.
func TestReaperOverlappingTicks(t *testing.T) {
	r := newReaperRig(t)
	var keys []session.Key
	for _, id := range []string{"o1", "o2", "o3"} {
		keys = append(keys, r.start(t, id, 60, false))
	}
	r.clock.Advance(2 * time.Minute)
	var wg sync.WaitGroup
	results := make([]emf, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = r.tick(t) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if k := results[0].Killed + results[1].Killed; k != 3 || results[0].Errors+results[1].Errors != 0 {
		t.Fatalf("overlapping ticks: %+v and %+v, want 3 kills in all", results[0], results[1])
	}
	for _, k := range keys {
		if st, sbx := r.state(t, k); st != session.StateStopped || r.sandboxState(t, sbx) != "gone" {
			t.Fatalf("%s: %s", k.SessionID, st)
		}
	}
}

// TestReaperE2BErrors: a failed kill fails the invocation (the Errors
// metric and alarm) and is finished by a later tick.
func TestReaperE2BErrors(t *testing.T) {
	r := newReaperRig(t)
	key := r.start(t, "flaky", 60, false)
	r.clock.Advance(2 * time.Minute)
	r.failKills.Store(true)
	m, err := r.tick(t)
	if err == nil || !strings.Contains(err.Error(), "1 sessions or orphans failed") {
		t.Fatalf("tick error %v", err)
	}
	want(t, m, 0, 0, 0, 1)
	r.failKills.Store(false)
	r.clock.Advance(2 * time.Minute) // the failed stop's lease runs out
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 1, 0, 0)
	if st, sbx := r.state(t, key); st != session.StateStopped || r.sandboxState(t, sbx) != "gone" {
		t.Fatalf("session %s", st)
	}
}

// TestReaperOrphans: a sandbox of this stack that no session owns is killed
// once past the grace period; another stack's is not.
func TestReaperOrphans(t *testing.T) {
	r := newReaperRig(t)
	ctx := lambdaCtx(t, "create")
	orphan, err := r.env.Sandboxes.Create(ctx, session.SandboxSpec{Template: "base", Timeout: time.Hour,
		Metadata: map[string]string{session.MetaStack: "sessionbox-acme", session.MetaTenant: tenant,
			session.MetaPrincipal: "alice", session.MetaSession: "ghost"}})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := r.env.Sandboxes.Create(ctx, session.SandboxSpec{Template: "base", Timeout: time.Hour,
		Metadata: map[string]string{session.MetaStack: "sessionbox-other"}})
	if err != nil {
		t.Fatal(err)
	}
	owned := r.start(t, "owned", 3600, false)
	m, err := r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 0, 0, 0) // too young
	r.clock.Advance(11 * time.Minute)
	m, err = r.tick(t)
	if err != nil {
		t.Fatal(err)
	}
	want(t, m, 0, 0, 1, 0)
	_, ownedSbx := r.state(t, owned)
	for id, wantState := range map[string]string{orphan.ID: "gone", foreign.ID: "running", ownedSbx: "running"} {
		if got := r.sandboxState(t, id); got != wantState {
			t.Fatalf("sandbox %s is %s, want %s", id, got, wantState)
		}
	}
	_ = r.env.Sandboxes.Kill(ctx, foreign.ID)
}

// TestReaperTickThatCannotRun: when the tick itself fails (the store is
// unreachable), the function fails and reports an error in its metrics.
func TestReaperTickThatCannotRun(t *testing.T) {
	r := newReaperRig(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", r.secrets.URL) // answers nothing DynamoDB understands
	env, _ := r.lambdaStack.env(lambdaenv.Reaper, lambdaenv.WithClock(r.clock))
	var out bytes.Buffer
	err := env.ReaperWith(env.Manager, &out).Handle(lambdaCtx(t, "tick"), readEvent(t, "reaper/scheduler-tick.json"))
	if err == nil || !strings.Contains(err.Error(), "reaper tick") {
		t.Fatalf("got %v", err)
	}
	want(t, parseEMF(t, out.Bytes()), 0, 0, 0, 1)
}

func readEvent(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReaperAcceptsAnyPayload invokes the reaper as Lambda would, with what
// the stack's schedule sends, what a schedule without input or a manual
// invoke sends, and an EventBridge rule's envelope: each is a tick.
func TestReaperAcceptsAnyPayload(t *testing.T) {
	r := newReaperRig(t)
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"the stack's input", readEvent(t, "reaper/scheduler-tick.json")},
		{"a rule envelope", readEvent(t, "reaper/rule-envelope.json")},
		{"empty object", []byte("{}")},
		{"null", []byte("null")},
		{"nothing", nil},
		{"a string", []byte(`"tick"`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if _, err := r.env.ReaperWith(r.env.Manager, &out).Invoke(lambdaCtx(t, "tick"), c.payload); err != nil {
				t.Fatal(err)
			}
			want(t, parseEMF(t, out.Bytes()), 0, 0, 0, 0)
		})
	}
}
