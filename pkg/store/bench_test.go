package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// benchStore is a store on minidyn over HTTP with the real SDK client: the
// figures are the adapter's and the SDK's cost plus a loopback round trip,
// not DynamoDB's latency.
func benchStore(b *testing.B) *store.Store {
	b.Helper()
	_, url := minidynServer(b)
	db := client(url)
	return store.New(db, newTable(b, db))
}

func benchSession(id string, now time.Time) *session.Session {
	return &session.Session{
		Key:   session.Key{Tenant: "acme", Principal: "alice", SessionID: id},
		State: session.StateRunning, SandboxID: "sbx-1", Template: "code-interpreter-v1",
		Metadata:  map[string]string{"team": "data"},
		CreatedAt: now, LastActivityAt: now, IdleDeadline: now.Add(30 * time.Minute),
		LifetimeDeadline: now.Add(2 * time.Hour), DueAt: now.Add(30 * time.Minute),
	}
}

func BenchmarkGetSession(b *testing.B) {
	st := benchStore(b)
	s := benchSession("s1", time.Now())
	if err := st.CreateSession(b.Context(), s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := st.GetSession(b.Context(), s.Key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateSession(b *testing.B) {
	st := benchStore(b)
	s := benchSession("s1", time.Now())
	if err := st.CreateSession(b.Context(), s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.LastActivityAt = s.LastActivityAt.Add(time.Second)
		if err := st.UpdateSession(b.Context(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDueSessions reads 100 due sessions out of 400 live ones, spread
// over the default four shards: one reaper tick.
func BenchmarkDueSessions(b *testing.B) {
	st := benchStore(b)
	now := time.Now()
	for i := range 400 {
		s := benchSession(fmt.Sprint("s", i), now)
		s.DueAt = now.Add(time.Duration(i-100) * time.Second)
		if err := st.CreateSession(b.Context(), s); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		got, err := st.DueSessions(b.Context(), now, 100)
		if err != nil || len(got) != 100 {
			b.Fatalf("%d due, %v", len(got), err)
		}
	}
}
