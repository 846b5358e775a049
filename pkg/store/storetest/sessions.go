package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func key(principal, id string) session.Key {
	return session.Key{Tenant: "acme", Principal: principal, SessionID: id}
}

// fullSession has every field set, so a round trip shows nothing is lost.
func fullSession(k session.Key, now time.Time) *session.Session {
	return &session.Session{
		Key: k, State: session.StateRunning, SandboxID: "sbx-" + k.SessionID,
		Type: session.TypeCodeInterpreter, Template: "code-interpreter-v1",
		Metadata:    map[string]string{"team": "data", "ünïcode": "✓"},
		IdleTimeout: 90 * time.Second, PauseOnIdle: true,
		CreatedAt: now.Add(-time.Hour), LastActivityAt: now.Add(-123456789 * time.Nanosecond),
		IdleDeadline: now.Add(30 * time.Minute), LifetimeDeadline: now.Add(2 * time.Hour),
		LeaseOwner: "lambda-1", LeaseUntil: now.Add(time.Minute),
		DueAt: now.Add(30 * time.Minute), ExpiresAt: now.Add(48 * time.Hour),
		SandboxStartedAt: now.Add(-time.Minute), TimeoutRefreshProblem: "refreshing the sandbox's timeout failed",
		Contexts: []session.CodeContext{
			{ID: "ctx-1", Language: "python", Cwd: "/home/user/a", SandboxID: "sbx-" + k.SessionID, CreatedAt: now.Add(-time.Second)},
			{ID: "ctx-0", Language: "bash", Cwd: "/tmp", SandboxID: "sbx-old", CreatedAt: now.Add(-2 * time.Hour)},
		},
	}
}

func mustCreate(t *testing.T, st session.Store, s *session.Session) {
	t.Helper()
	if err := st.CreateSession(t.Context(), s); err != nil {
		t.Fatalf("CreateSession(%s): %v", s.SessionID, err)
	}
}

func mustGet(t *testing.T, st session.Store, k session.Key) *session.Session {
	t.Helper()
	got, err := st.GetSession(t.Context(), k)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", k.SessionID, err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

func testSessionRoundTrip(t *testing.T, env Env, clock *testclock.Clock) {
	in := fullSession(key("alice", "s1"), clock.Now())
	mustCreate(t, env.Store, in)
	if in.Version != 1 {
		t.Fatalf("version after create = %d, want 1", in.Version)
	}
	got := mustGet(t, env.Store, in.Key)
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip changed the session:\n got %+v\nwant %+v", got, in)
	}
}

func testSessionLifecycle(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	k := key("alice", "s1")
	_, err := st.GetSession(ctx, k)
	wantErr(t, "get before create", err, session.ErrNotFound)

	s := &session.Session{Key: k, State: session.StateStarting, CreatedAt: clock.Now()}
	mustCreate(t, st, s)
	wantErr(t, "second create", st.CreateSession(ctx, &session.Session{Key: k, State: session.StateStarting}), session.ErrConflict)

	s.State, s.SandboxID = session.StateRunning, "sbx-1"
	if err := st.UpdateSession(ctx, s); err != nil {
		t.Fatalf("update: %v", err)
	}
	if s.Version != 2 {
		t.Fatalf("version after update = %d, want 2", s.Version)
	}
	stale := *s
	stale.Version = 1
	stale.State = session.StateStopped
	wantErr(t, "stale update", st.UpdateSession(ctx, &stale), session.ErrConflict)
	if stale.Version != 1 {
		t.Fatalf("failed update changed the version to %d", stale.Version)
	}

	got := mustGet(t, st, k)
	if got.State != session.StateRunning || got.SandboxID != "sbx-1" || got.Version != 2 {
		t.Fatalf("after update got state=%s sandbox=%s version=%d", got.State, got.SandboxID, got.Version)
	}
	missing := &session.Session{Key: key("alice", "nope"), State: session.StateRunning, Version: 1}
	wantErr(t, "update of a missing session", st.UpdateSession(ctx, missing), session.ErrConflict)
	other := key("bob", "s1")
	_, err = st.GetSession(ctx, other)
	wantErr(t, "same id, other principal", err, session.ErrNotFound)
}

// testConcurrentUpdates has 20 writers race from the same version: exactly
// one may win, and the stored record must be the winner's.
func testConcurrentUpdates(t *testing.T, env Env, clock *testclock.Clock) {
	k := key("alice", "race")
	mustCreate(t, env.Store, &session.Session{Key: k, State: session.StateStarting})
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := &session.Session{Key: k, State: session.StateRunning, LeaseOwner: fmt.Sprint("w", i), Version: 1}
			errs[i] = env.Store.UpdateSession(t.Context(), s)
		})
	}
	wg.Wait()
	winner := onlyWinner(t, errs)
	got := mustGet(t, env.Store, k)
	if got.Version != 2 || got.LeaseOwner != fmt.Sprint("w", winner) {
		t.Fatalf("stored version=%d owner=%q, want 2 and w%d", got.Version, got.LeaseOwner, winner)
	}
}

func testConcurrentCreates(t *testing.T, env Env, clock *testclock.Clock) {
	k := key("alice", "new")
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := &session.Session{Key: k, State: session.StateStarting, LeaseOwner: fmt.Sprint("w", i)}
			errs[i] = env.Store.CreateSession(t.Context(), s)
		})
	}
	wg.Wait()
	winner := onlyWinner(t, errs)
	if got := mustGet(t, env.Store, k); got.LeaseOwner != fmt.Sprint("w", winner) {
		t.Fatalf("stored owner %q, want w%d", got.LeaseOwner, winner)
	}
}

// onlyWinner checks that exactly one error is nil and the rest ErrConflict,
// and returns the index of the nil one.
func onlyWinner(t *testing.T, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, session.ErrConflict):
			t.Fatalf("writer %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	return winner
}

func testExpired(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	k := key("alice", "old")
	s := &session.Session{Key: k, State: session.StateStopped, ExpiresAt: clock.Now().Add(time.Minute)}
	mustCreate(t, st, s)
	mustGet(t, st, k)
	run := &session.Run{ID: "run-old", Key: k, Status: session.RunSucceeded, ExpiresAt: clock.Now().Add(time.Minute)}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}

	clock.Advance(2 * time.Minute)
	_, err := st.GetSession(ctx, k)
	wantErr(t, "get expired session", err, session.ErrNotFound)
	list, _, err := st.ListSessions(ctx, "acme", "alice", 10, "")
	if err != nil || len(list) != 0 {
		t.Fatalf("list after expiry: %d sessions, err %v; want none", len(list), err)
	}
	_, err = st.GetRun(ctx, run.ID)
	wantErr(t, "get expired run", err, session.ErrNotFound)

	// An expired record is gone for writers too: the id can be used again.
	mustCreate(t, st, &session.Session{Key: k, State: session.StateStarting})
	if got := mustGet(t, st, k); got.State != session.StateStarting || got.Version != 1 {
		t.Fatalf("recreated session: state %s version %d", got.State, got.Version)
	}
	if err := st.CreateRun(ctx, &session.Run{ID: run.ID, Key: k, Status: session.RunQueued}); err != nil {
		t.Fatalf("CreateRun over an expired run: %v", err)
	}
}

// testExpiryAgrees checks that readers and writers agree on when a record
// is gone, even within the second it expires: a record that reads as
// present cannot be replaced, and one that reads as gone can.
func testExpiryAgrees(t *testing.T, env Env, clock *testclock.Clock) {
	ctx := context.Background()
	k := key("alice", "boundary")
	clock.Advance(100 * time.Millisecond)
	mustCreate(t, env.Store, &session.Session{Key: k, State: session.StateStopped, ExpiresAt: clock.Now().Add(1500 * time.Millisecond)})
	for _, step := range []time.Duration{600 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond} {
		clock.Advance(step)
		_, getErr := env.Store.GetSession(ctx, k)
		gone := errors.Is(getErr, session.ErrNotFound)
		if getErr != nil && !gone {
			t.Fatalf("get at %v: %v", clock.Now(), getErr)
		}
		createErr := env.Store.CreateSession(ctx, &session.Session{Key: k, State: session.StateStopped, ExpiresAt: clock.Now().Add(time.Hour)})
		switch {
		case gone && createErr != nil:
			t.Fatalf("at %v the record reads as gone but cannot be replaced: %v", clock.Now(), createErr)
		case !gone && !errors.Is(createErr, session.ErrConflict):
			t.Fatalf("at %v the record reads as present but create gave %v, want ErrConflict", clock.Now(), createErr)
		case gone:
			return
		}
	}
	t.Fatal("the record never expired")
}

func testSessionTooLarge(t *testing.T, env Env, clock *testclock.Clock) {
	k := key("alice", "big")
	s := &session.Session{Key: k, State: session.StateRunning, Metadata: map[string]string{"blob": string(make([]byte, 450<<10))}}
	wantErr(t, "create oversized session", env.Store.CreateSession(t.Context(), s), session.ErrTooLarge)
	_, err := env.Store.GetSession(t.Context(), k)
	wantErr(t, "get after refused create", err, session.ErrNotFound)
}

func testUnavailable(t *testing.T, env Env, clock *testclock.Clock) {
	if env.Fail == nil {
		t.Fatal("this Env cannot inject faults; every backend under the contract must")
	}
	st, ctx := env.Store, t.Context()
	k := key("alice", "s1")
	mustCreate(t, st, &session.Session{Key: k, State: session.StateRunning})
	env.Fail(true)
	_, err := st.GetSession(ctx, k)
	wantErr(t, "get while failing", err, session.ErrUnavailable)
	wantErr(t, "update while failing", st.UpdateSession(ctx, &session.Session{Key: k, State: session.StateStopped, Version: 1}), session.ErrUnavailable)
	_, err = st.DueSessions(ctx, clock.Now(), 10)
	wantErr(t, "due while failing", err, session.ErrUnavailable)
	_, _, err = st.ListSessions(ctx, "acme", "alice", 10, "")
	wantErr(t, "list while failing", err, session.ErrUnavailable)
	_, err = st.GetRun(ctx, "r1")
	wantErr(t, "get run while failing", err, session.ErrUnavailable)
	env.Fail(false)
	if got := mustGet(t, st, k); got.Version != 1 || got.State != session.StateRunning {
		t.Fatalf("after healing: version %d state %s; the failed update must not have applied", got.Version, got.State)
	}
}

// testKeysDoNotCollide uses owners whose names would run together if the
// store joined them naively.
func testKeysDoNotCollide(t *testing.T, env Env, clock *testclock.Clock) {
	a := session.Key{Tenant: "x#P#y", Principal: "z", SessionID: "s1"}
	b := session.Key{Tenant: "x", Principal: "y#P#z", SessionID: "s1"}
	c := session.Key{Tenant: "x", Principal: "y%23P%23z", SessionID: "s1"}
	for _, k := range []session.Key{a, b, c} {
		mustCreate(t, env.Store, &session.Session{Key: k, State: session.StateRunning, SandboxID: k.Tenant + "/" + k.Principal})
	}
	for _, k := range []session.Key{a, b, c} {
		if got := mustGet(t, env.Store, k); got.SandboxID != k.Tenant+"/"+k.Principal || got.Key != k {
			t.Fatalf("%+v read back %+v with sandbox %s", k, got.Key, got.SandboxID)
		}
		list, _, err := env.Store.ListSessions(t.Context(), k.Tenant, k.Principal, 10, "")
		if err != nil || len(list) != 1 || list[0].Key != k {
			t.Fatalf("listing of %s/%s: %d sessions, %v", k.Tenant, k.Principal, len(list), err)
		}
	}
}
