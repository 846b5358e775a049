package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// completed returns the "Run Completed" events published for runID.
func (s *lambdaStack) completed(t *testing.T, runID string) []session.RunCompleted {
	t.Helper()
	var out []session.RunCompleted
	for _, e := range s.events.Entries("Run Completed") {
		var c session.RunCompleted
		if err := json.Unmarshal([]byte(e.Detail), &c); err != nil {
			t.Fatal(err)
		}
		if c.RunID == runID {
			out = append(out, c)
		}
	}
	return out
}

func runEvent(t *testing.T, detail session.RunRequested) events.CloudWatchEvent {
	ev := loadEvent[events.CloudWatchEvent](t, "runs/run-requested.json")
	b, err := json.Marshal(detail)
	if err != nil {
		t.Fatal(err)
	}
	ev.Detail = b
	return ev
}

func mainText(r *session.Run) string {
	if r.Result == nil {
		return ""
	}
	for _, x := range r.Result.Results {
		if x.IsMainResult {
			return x.Text
		}
	}
	return ""
}

// TestReplayRunsEvents replays the run samples, each twice: the second
// delivery must not run the code again.
func TestReplayRunsEvents(t *testing.T) {
	s := newLambdaStack(t)
	env, _ := s.env(lambdaenv.Runs)
	h := env.Runs()
	for _, c := range []struct {
		file, runID, text string
	}{
		{"runs/run-requested.json", "run-replay-0001", "3628800"},
		{"runs/run-requested-idempotent.json", session.RunID(tenant, "alice", "nightly-2026-11-21"), "42"},
	} {
		t.Run(c.file, func(t *testing.T) {
			ev := loadEvent[events.CloudWatchEvent](t, c.file)
			var first *session.Run
			for delivery := range 2 {
				if err := h.Handle(lambdaCtx(t, "runs"), ev); err != nil {
					t.Fatalf("delivery %d: %v", delivery+1, err)
				}
				r, err := s.store.GetRun(lambdaCtx(t, "check"), c.runID)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != session.RunSucceeded || mainText(r) != c.text {
					t.Fatalf("delivery %d: run %+v", delivery+1, r)
				}
				if first == nil {
					first = r
				} else if r.Version != first.Version || !r.StartedAt.Equal(first.StartedAt) {
					t.Fatalf("the second delivery changed the run: %+v then %+v", first, r)
				}
			}
			done := s.completed(t, c.runID)
			if len(done) != 1 || done[0].Status != session.RunSucceeded || done[0].Result == nil {
				t.Fatalf("Run Completed events %+v, want one", done)
			}
		})
	}
}

// TestRunsRefusesForeignTenant delivers run requests naming another tenant,
// or no principal, to the runs function: each is refused with its reason
// (so it ends in the dead-letter queue), nothing is recorded and no sandbox
// starts.
func TestRunsRefusesForeignTenant(t *testing.T) {
	s := newLambdaStack(t)
	env, logs := s.env(lambdaenv.Runs)
	h := env.Runs()
	for _, c := range []struct {
		name   string
		detail session.RunRequested
		want   string
	}{
		{"other tenant", session.RunRequested{Tenant: "other-tenant", Principal: "mallory", SessionID: "s",
			RunID: "run-foreign-1", Code: "1"}, `"other-tenant"`},
		{"no principal", session.RunRequested{Tenant: tenant, SessionID: "s", RunID: "run-foreign-2", Code: "1"}, "principal"},
		{"principal with #", session.RunRequested{Tenant: tenant, Principal: "a#b", SessionID: "s",
			RunID: "run-foreign-3", Code: "1"}, "principal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := h.Handle(lambdaCtx(t, "foreign"), runEvent(t, c.detail))
			if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a refusal naming %s", err, c.want)
			}
			if _, err := s.store.GetRun(lambdaCtx(t, "check"), c.detail.RunID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("run record: %v", err)
			}
			if done := s.completed(t, c.detail.RunID); len(done) != 0 {
				t.Fatalf("Run Completed %+v", done)
			}
		})
	}
	for _, tn := range []string{"other-tenant", tenant} {
		sessions, _, err := s.store.ListSessions(lambdaCtx(t, "list"), tn, "mallory", 10, "")
		if err != nil || len(sessions) != 0 {
			t.Fatalf("sessions of %s: %v %v", tn, sessions, err)
		}
	}
	if sbs, err := env.Sandboxes.List(lambdaCtx(t, "list"), nil); err != nil || len(sbs) != 0 {
		t.Fatalf("sandboxes %+v %v", sbs, err)
	}
	if !strings.Contains(logs.String(), `"message":"run refused"`) {
		t.Fatalf("no refusal logged:\n%s", logs)
	}
	lambdaenvtest.NoDuplicateKeys(t, logs.String())
}

// TestRunsLargeResultThroughStatus runs code whose result is too large for
// the run record, through the runs function, then fetches it as a client
// would: GET /v1/runs/{runId} on the status function answers a presigned
// URL (the status function reads blob storage), and the URL serves it.
func TestRunsLargeResultThroughStatus(t *testing.T) {
	s := newLambdaStack(t)
	runs, _ := s.env(lambdaenv.Runs)
	status, _ := s.env(lambdaenv.Status)
	const runID = "run-large-1"
	ev := runEvent(t, session.RunRequested{Tenant: tenant, Principal: "alice", SessionID: "big", RunID: runID,
		// stdout and stderr are capped at 200 KB each: both near it pass
		// the record's 300 KB.
		Code: "import sys\nprint('x' * 190000)\nprint('y' * 190000, file=sys.stderr)"})
	if err := runs.Runs().Handle(lambdaCtx(t, "runs"), ev); err != nil {
		t.Fatal(err)
	}
	a := invokeAPI(t, map[string]*sessionenv.Env{"status": status}, "status/get-run.json", func(ev *events.APIGatewayProxyRequest) {
		ev.Path = "/v1/runs/" + runID
		ev.PathParameters["runId"] = runID
	})
	a.ok(t, http.StatusOK)
	v := a.json(t)
	url, _ := v["resultUrl"].(string)
	if v["status"] != "succeeded" || v["result"] != nil || url == "" {
		t.Fatalf("run: %.300s", a.body)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r session.ExecResult
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("result download: %d %v", res.StatusCode, err)
	}
	if len(r.Stdout) != 190001 || strings.Trim(r.Stdout, "x\n") != "" || len(r.Stderr) != 190001 {
		t.Fatalf("downloaded stdout of %d bytes, stderr of %d", len(r.Stdout), len(r.Stderr))
	}
}

// TestRunsDuplicateDeliveryRunsOnce delivers one event three times at once:
// the code, which appends to a file, runs once.
func TestRunsDuplicateDeliveryRunsOnce(t *testing.T) {
	s := newLambdaStack(t)
	env, _ := s.env(lambdaenv.Runs)
	h := env.Runs()
	ev := runEvent(t, session.RunRequested{Tenant: tenant, Principal: "bob", SessionID: "dup",
		RunID: "run-dup-1", Code: "open('/home/user/ran.txt', 'a').write('x')"})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = h.Handle(lambdaCtx(t, fmt.Sprint("dup-", i)), ev) })
	}
	wg.Wait()
	// A delivery that finds the run in progress elsewhere fails with a
	// conflict, so EventBridge tries it again later; one of them ran it.
	succeeded := 0
	for i, err := range errs {
		switch {
		case err == nil:
			succeeded++
		case !errors.Is(err, session.ErrConflict):
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if succeeded == 0 {
		t.Fatal("no delivery ran the code")
	}
	// Delivered again once it has finished, it is done: nothing runs.
	if err := h.Handle(lambdaCtx(t, "dup-late"), ev); err != nil {
		t.Fatalf("late duplicate: %v", err)
	}
	body, _, err := env.Manager.ReadFile(lambdaCtx(t, "read"), session.Key{Tenant: tenant, Principal: "bob", SessionID: "dup"}, "ran.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	b, _ := io.ReadAll(body)
	if string(b) != "x" {
		t.Fatalf("the code ran %d times", len(b))
	}
	if done := s.completed(t, "run-dup-1"); len(done) != 1 {
		t.Fatalf("%d Run Completed events", len(done))
	}
}

// TestRunsSubmittedThroughTheAPI follows a run from SubmitRun (the execute
// function) over the bus to the runs function.
func TestRunsSubmittedThroughTheAPI(t *testing.T) {
	s := newLambdaStack(t)
	exec, _ := s.env(lambdaenv.Execute)
	runs, _ := s.env(lambdaenv.Runs)
	key := session.Key{Tenant: tenant, Principal: "carol", SessionID: "nightly"}
	run, err := exec.Manager.SubmitRun(lambdaCtx(t, "submit"), key, session.RunRequest{Code: "6 * 7"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.events.Entries("Run Requested")
	if len(reqs) != 1 {
		t.Fatalf("%d Run Requested events", len(reqs))
	}
	ev := loadEvent[events.CloudWatchEvent](t, "runs/run-requested.json")
	ev.Detail = json.RawMessage(reqs[0].Detail)
	if err := runs.Runs().Handle(lambdaCtx(t, "runs"), ev); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Manager.GetRun(lambdaCtx(t, "get"), tenant, "carol", run.ID)
	if err != nil || got.Status != session.RunSucceeded || mainText(got) != "42" {
		t.Fatalf("run %+v (%v)", got, err)
	}
}

// TestRunsFailuresReachTheDeadLetterPath checks that a run that cannot be
// carried out fails the invocation with its reason (Lambda's async retries
// and then the on-failure destination take it from there), on every
// delivery, without running the code twice.
func TestRunsFailuresReachTheDeadLetterPath(t *testing.T) {
	s := newLambdaStack(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	t.Setenv("E2B_API_URL", dead)
	t.Setenv("E2B_SANDBOX_URL", dead)
	env, _ := s.env(lambdaenv.Runs)
	h := env.Runs()

	t.Run("provider down", func(t *testing.T) {
		ev := runEvent(t, session.RunRequested{Tenant: tenant, Principal: "alice", SessionID: "down", RunID: "run-down-1", Code: "1"})
		// The first delivery names the cause; a later one reads the run's
		// record, whose reason is the public one (no addresses).
		for delivery, reason := range []string{"connect", "provider is unavailable"} {
			err := h.Handle(lambdaCtx(t, "down"), ev)
			if err == nil || !strings.Contains(err.Error(), "run-down-1") || !strings.Contains(err.Error(), reason) {
				t.Fatalf("delivery %d: %v, want the run id and %q", delivery+1, err, reason)
			}
		}
		r, err := s.store.GetRun(lambdaCtx(t, "check"), "run-down-1")
		if err != nil || r.Status != session.RunFailed || r.Error == "" {
			t.Fatalf("run %+v (%v)", r, err)
		}
		if done := s.completed(t, "run-down-1"); len(done) != 1 || done[0].Status != session.RunFailed {
			t.Fatalf("Run Completed events %+v", done)
		}
	})
	for _, c := range []struct {
		name string
		ev   func() events.CloudWatchEvent
		want string
	}{
		{"bad session id", func() events.CloudWatchEvent {
			return runEvent(t, session.RunRequested{Tenant: tenant, Principal: "alice", SessionID: "bad id!", Code: "1"})
		}, "session"},
		{"no code", func() events.CloudWatchEvent {
			return runEvent(t, session.RunRequested{Tenant: tenant, Principal: "alice", SessionID: "s"})
		}, "code"},
		{"not a run request", func() events.CloudWatchEvent {
			ev := loadEvent[events.CloudWatchEvent](t, "reaper/scheduler-tick.json")
			return ev
		}, "detail-type"},
		{"detail not an object", func() events.CloudWatchEvent {
			ev := loadEvent[events.CloudWatchEvent](t, "runs/run-requested.json")
			ev.Detail = json.RawMessage(`"{}"`)
			return ev
		}, "not a run request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := h.Handle(lambdaCtx(t, "bad"), c.ev())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error about %s", err, c.want)
			}
		})
	}
}

// TestRunsEventWithoutIDsRunsOncePerEvent: an event a pipeline put on the
// bus with neither runId nor idempotencyKey is keyed by its event id, so a
// redelivery (same id) does not run the code again while another event
// with the same detail (new id) is a run of its own.
func TestRunsEventWithoutIDsRunsOncePerEvent(t *testing.T) {
	s := newLambdaStack(t)
	env, _ := s.env(lambdaenv.Runs)
	h := env.Runs()
	key := session.Key{Tenant: tenant, Principal: "dora", SessionID: "pipeline"}
	ev := runEvent(t, session.RunRequested{Tenant: key.Tenant, Principal: key.Principal, SessionID: key.SessionID,
		Code: "open('/home/user/ran.txt', 'a').write('x')"})
	second := ev
	second.ID = ev.ID + "-next"
	for i, e := range []events.CloudWatchEvent{ev, ev, second, second} {
		if err := h.Handle(lambdaCtx(t, fmt.Sprint("delivery-", i)), e); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	body, _, err := env.Manager.ReadFile(lambdaCtx(t, "read"), key, "ran.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	if b, _ := io.ReadAll(body); string(b) != "xx" {
		t.Fatalf("two events delivered twice each ran the code %d times, want 2", len(b))
	}
	for _, id := range []string{ev.ID, second.ID} {
		runID := session.RunID(tenant, key.Principal, "event:"+id)
		r, err := s.store.GetRun(lambdaCtx(t, "check"), runID)
		if err != nil || r.Status != session.RunSucceeded {
			t.Fatalf("run of event %s: %+v (%v)", id, r, err)
		}
		if done := s.completed(t, runID); len(done) != 1 {
			t.Fatalf("event %s: %d Run Completed events, want 1", id, len(done))
		}
	}
}
