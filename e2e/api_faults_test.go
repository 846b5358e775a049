package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/faultproxy"
	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// TestEndToEndProviderFaults fails and stalls E2B's control plane under a
// working service: callers get the documented problems, and once E2B is
// back the same sessions work, with no sandbox left behind by the failures.
func TestEndToEndProviderFaults(t *testing.T) {
	// Each E2B call's bound: long enough for a create on a loaded host
	// once E2B is back, far shorter than the stall.
	const e2bTimeout = 8 * time.Second
	s := newStackWith(t, e2bTimeout, session.Config{})
	cases := []struct {
		name   string
		status int
		hang   time.Duration
		want   int
		slug   string
	}{
		{"E2B answers 503", http.StatusServiceUnavailable, 0, 502, "unavailable"},
		{"E2B answers 500", http.StatusInternalServerError, 0, 502, "unavailable"},
		{"E2B rate-limits", http.StatusTooManyRequests, 0, 429, "limit-reached"},
		{"E2B stalls", 0, 10 * e2bTimeout, 504, "timeout"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := "fault-" + string(rune('a'+i))
			s.fault.Set(faultproxy.Fault{Status: tc.status, Hang: tc.hang})
			resp, body := s.req(s.alice, "POST", "/v1/sessions/"+sid+"/execute", strings.NewReader(`{"code":"1 + 1"}`))
			s.fault.Heal()
			p := s.problem(tc.want, resp, body)
			if p["type"] != "https://sessionbox.dev/problems/"+tc.slug {
				t.Fatalf("problem %v", p)
			}
			if r := s.exec(s.alice, sid, "1 + 1"); r.text() != "2" {
				t.Fatalf("after the outage: %+v", r)
			}
			if ids := s.sessionSandboxes("alice", sid); len(ids) != 1 {
				t.Fatalf("sandboxes of %s after the outage: %v", sid, ids)
			}
		})
	}
}

// TestEndToEndStoreFaults fails DynamoDB's writes under a working service,
// before the session is recorded and between the sandbox's creation and
// its recording: callers get a problem, and once the store is back the
// session works with exactly one sandbox, none left behind.
func TestEndToEndStoreFaults(t *testing.T) {
	s := newStoreFaultStack(t, session.Config{LeaseDuration: 2 * time.Second})
	cases := []struct {
		name string
		pass int
	}{
		{"the first write fails", 0},
		{"the write after the sandbox started fails", 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := fmt.Sprintf("store-fault-%d", i)
			s.dbFault.Set(faultproxy.Fault{Status: http.StatusInternalServerError, Match: faultproxy.DynamoDBOp("PutItem"), Pass: tc.pass})
			resp, body := s.req(s.alice, "POST", "/v1/sessions/"+sid+"/execute", strings.NewReader(`{"code":"1 + 1"}`))
			s.dbFault.Heal()
			if resp.StatusCode < 500 || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("with the store failing: %d %s", resp.StatusCode, body)
			}
			t.Logf("with the store failing: %d %s", resp.StatusCode, body)
			if r := s.exec(s.alice, sid, "1 + 1"); r.text() != "2" {
				t.Fatalf("after the outage: %+v", r)
			}
			if ids := s.sessionSandboxes("alice", sid); len(ids) != 1 {
				t.Fatalf("sandboxes of %s after the outage: %v", sid, ids)
			}
		})
	}
}

// newStoreFaultStack is a stack whose DynamoDB sits behind s.dbFault, for
// alice only. pkg/local starts its emulator with no seam in front of it, so
// this test wires the Manager and the API itself from the adapters local
// mode uses (without blobs and bus: it only executes code).
func newStoreFaultStack(t *testing.T, cfg session.Config) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, logger := newBareStack(t)
	s.sandboxes = sandboxesOf(t, startRuntime(t))
	endpoint, stop, err := localaws.StartDynamoDB(context.Background(), localaws.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s.dbFault = faultproxy.New(t, endpoint)
	db := localaws.DynamoDBClient(s.dbFault.URL)
	if err := store.CreateTable(ctx, db, local.Table); err != nil {
		t.Fatal(err)
	}
	st := store.New(db, local.Table)
	cfg.StackID, cfg.Tenant = "api-e2e", "t1"
	s.stackID = cfg.StackID
	mgr, err := session.NewManager(cfg, session.Deps{Store: st, Sandboxes: s.sandboxes, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	plain, key, err := session.NewAPIKey("t1", "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(mgr, api.WithLogger(logger)))
	t.Cleanup(srv.Close)
	s.alice, s.url, s.client = plain, srv.URL, srv.Client()
	return s
}
