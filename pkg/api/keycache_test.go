package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// countingKeys is a Manager whose Authenticate knows one key and counts its
// calls; nothing else of the Manager is used here.
type countingKeys struct {
	Manager
	calls   int
	revoked bool
}

func (m *countingKeys) Authenticate(ctx context.Context, key string) (*session.APIKey, error) {
	m.calls++
	if key != "sbx_known-key-for-cache" || m.revoked {
		return nil, session.Errorf(session.ErrUnauthorized, "unknown key")
	}
	return &session.APIKey{Tenant: "t", Principal: "alice"}, nil
}

func TestKeyCache(t *testing.T) {
	t.Parallel()
	mgr := &countingKeys{}
	s := New(mgr, WithKeyCache(time.Hour))
	ask := func(key string) (identity, error) {
		r := httptest.NewRequest(http.MethodGet, "/v1/sessions", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return s.identify(r)
	}
	for range 3 {
		if id, err := ask("sbx_known-key-for-cache"); err != nil || id.principal != "alice" {
			t.Fatalf("known key: %+v %v", id, err)
		}
	}
	if mgr.calls != 1 {
		t.Fatalf("a known key was looked up %d times, want once", mgr.calls)
	}
	for range 2 {
		if _, err := ask("sbx_unknown-key"); err == nil {
			t.Fatal("unknown key accepted")
		}
	}
	if mgr.calls != 3 {
		t.Fatalf("refusals must not be cached: %d lookups, want 3", mgr.calls)
	}

}

// TestKeyCacheExpiry: a revoked key keeps working while its cache entry
// lives, and stops the moment the cache time has passed, by the server's
// clock.
func TestKeyCacheExpiry(t *testing.T) {
	t.Parallel()
	mgr := &countingKeys{}
	clock := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := New(mgr, WithKeyCache(time.Minute), WithClock(clock))
	r := httptest.NewRequest(http.MethodGet, "/v1/sessions", nil)
	r.Header.Set("X-API-Key", "sbx_known-key-for-cache")
	if _, err := s.identify(r); err != nil {
		t.Fatal(err)
	}
	mgr.revoked = true
	clock.Advance(time.Minute)
	if _, err := s.identify(r); err != nil {
		t.Fatalf("a cached key refused within the cache time: %v", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := s.identify(r); err == nil {
		t.Fatal("a revoked key still works after the cache time")
	}
	if mgr.calls != 2 {
		t.Fatalf("%d lookups, want 2: one to fill the cache, one after it expired", mgr.calls)
	}
}
