package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func dueIDs(t *testing.T, st session.Store, at time.Time, limit int) []string {
	t.Helper()
	got, err := st.DueSessions(t.Context(), at, limit)
	if err != nil {
		t.Fatalf("DueSessions: %v", err)
	}
	ids := make([]string, len(got))
	for i, s := range got {
		ids[i] = s.SessionID
		if !s.State.Live() || s.DueAt.After(at) {
			t.Fatalf("due session %s: state %s, due %v (asked for %v)", s.SessionID, s.State, s.DueAt, at)
		}
	}
	return ids
}

func testDueSessions(t *testing.T, env Env, clock *testclock.Clock) {
	now := clock.Now()
	cases := []struct {
		id    string
		state session.State
		due   time.Time
	}{
		{"running-past", session.StateRunning, now.Add(-time.Minute)},
		{"paused-past", session.StatePaused, now.Add(-2 * time.Minute)},
		{"starting-past", session.StateStarting, now.Add(-3 * time.Minute)},
		{"stopping-now", session.StateStopping, now},
		{"running-future", session.StateRunning, now.Add(time.Minute)},
		{"running-sub-second-future", session.StateRunning, now.Add(300 * time.Millisecond)},
		{"stopped-past", session.StateStopped, now.Add(-time.Minute)},
		{"error-past", session.StateError, now.Add(-time.Minute)},
		{"running-no-deadline", session.StateRunning, time.Time{}},
	}
	for _, c := range cases {
		mustCreate(t, env.Store, &session.Session{Key: key("alice", c.id), State: c.state, DueAt: c.due})
	}
	want := []string{"starting-past", "paused-past", "running-past", "stopping-now"} // earliest first
	if got := dueIDs(t, env.Store, now, 100); !slices.Equal(got, want) {
		t.Fatalf("due at now: %v, want %v", got, want)
	}
	later := dueIDs(t, env.Store, now.Add(time.Hour), 100)
	if len(later) != 6 || !slices.Contains(later, "running-sub-second-future") {
		t.Fatalf("due in an hour: %v, want the 6 live sessions with deadlines", later)
	}
	if got := dueIDs(t, env.Store, now.Add(-time.Hour), 100); len(got) != 0 {
		t.Fatalf("due an hour ago: %v, want none", got)
	}
}

// testDueLimitAndOrder spreads many due sessions over principals (and so,
// in sharded stores, over shards) and checks the global order and limit.
func testDueLimitAndOrder(t *testing.T, env Env, clock *testclock.Clock) {
	now := clock.Now()
	const n = 24
	var want []string
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		// Deadlines descend with i, so insertion order is not the answer.
		due := now.Add(-time.Duration(i) * time.Second)
		mustCreate(t, env.Store, &session.Session{Key: key(fmt.Sprint("p", i%5), id), State: session.StateRunning, DueAt: due})
		want = append([]string{id}, want...)
	}
	for _, limit := range []int{1, 5, n, n + 10} {
		got := dueIDs(t, env.Store, now, limit)
		if !slices.Equal(got, want[:min(limit, n)]) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want[:min(limit, n)])
		}
	}
	if _, err := env.Store.DueSessions(t.Context(), now, 0); err == nil {
		t.Fatal("limit 0 accepted")
	}
}

func testDueFollowUpdates(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	now := clock.Now()
	s := &session.Session{Key: key("alice", "s1"), State: session.StateRunning, DueAt: now.Add(-time.Second)}
	mustCreate(t, st, s)
	steps := []struct {
		name   string
		change func(*session.Session)
		due    bool
	}{
		{"deadline pushed back", func(s *session.Session) { s.DueAt = now.Add(time.Hour) }, false},
		{"deadline passed again", func(s *session.Session) { s.DueAt = now.Add(-time.Minute) }, true},
		{"stopped", func(s *session.Session) { s.State = session.StateStopped }, false},
		{"restarted", func(s *session.Session) { s.State = session.StateRunning }, true},
		{"deadline cleared", func(s *session.Session) { s.DueAt = time.Time{} }, false},
	}
	for _, step := range steps {
		step.change(s)
		if err := st.UpdateSession(ctx, s); err != nil {
			t.Fatalf("%s: update: %v", step.name, err)
		}
		got := dueIDs(t, st, now, 10)
		if (len(got) == 1) != step.due {
			t.Fatalf("%s: due sessions %v, want due=%v", step.name, got, step.due)
		}
	}
}
