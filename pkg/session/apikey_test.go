package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{Tenant: "acme"})
	ctx := context.Background()
	plain, k, err := NewAPIKey("acme", "alice", r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, "sbx_") || len(plain) != 4+43 || !strings.HasPrefix(plain, k.Prefix) {
		t.Fatalf("key %q prefix %q", plain, k.Prefix)
	}
	if err := CheckAPIKeyShape(plain); err != nil {
		t.Fatalf("a generated key has the wrong shape: %v", err)
	}
	if k.Hash != HashAPIKey(plain) || len(k.Hash) != 64 || strings.Contains(k.Hash, plain) {
		t.Fatalf("hash %q", k.Hash)
	}
	// Known vector: sha256("sbx_test").
	if got := HashAPIKey("sbx_test"); got != "512810121dd1644d58b8487422669dff5511db6f61a6a448ec7f53a9555aa5b0" {
		t.Fatalf("HashAPIKey = %s", got)
	}
	other, _, _ := NewAPIKey("acme", "alice", r.clock.Now())
	if other == plain {
		t.Fatal("two keys alike")
	}
	if err := r.store.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := r.m.Authenticate(ctx, plain)
	if err != nil || got.Tenant != "acme" || got.Principal != "alice" {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"", "sbx_", other, plain + "x", "Bearer " + plain, strings.ToUpper(plain)} {
		if _, err := r.m.Authenticate(ctx, bad); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v", bad, err)
		}
	}
	if err := r.store.RevokeAPIKey(ctx, k.Hash, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Authenticate(ctx, plain); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("revoked key: %v", err)
	}
	if _, _, err := NewAPIKey("", "alice", r.clock.Now()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty tenant: %v", err)
	}
}

// keyMap is an APIKeyGetter over records by hash; lookups counts the calls.
type keyMap struct {
	recs    map[string]*APIKey
	err     error
	lookups int
}

func (m *keyMap) GetAPIKey(_ context.Context, hash string) (*APIKey, error) {
	m.lookups++
	if m.err != nil {
		return nil, m.err
	}
	if k, ok := m.recs[hash]; ok {
		return k, nil
	}
	return nil, Errorf(ErrNotFound, "no key")
}

func TestVerifyAPIKey(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const (
		good      = "sbx_good_key_0123456789"
		revoked   = "sbx_revoked_0123456789"
		foreign   = "sbx_foreign_0123456789"
		anonymous = "sbx_anonymous_01234567"
		mismatch  = "sbx_mismatch_012345678"
	)
	rec := func(plain, tenant, principal string) *APIKey {
		return &APIKey{Hash: HashAPIKey(plain), Prefix: plain[:10], Tenant: tenant, Principal: principal, CreatedAt: now}
	}
	keys := &keyMap{recs: map[string]*APIKey{}}
	keys.recs[HashAPIKey(good)] = rec(good, "acme", "alice")
	keys.recs[HashAPIKey(revoked)] = rec(revoked, "acme", "bob")
	keys.recs[HashAPIKey(revoked)].RevokedAt = now
	keys.recs[HashAPIKey(foreign)] = rec(foreign, "globex", "carol")
	keys.recs[HashAPIKey(anonymous)] = rec(anonymous, "acme", "")
	// A store that matched loosely: the record is another key's.
	keys.recs[HashAPIKey(mismatch)] = rec(good, "acme", "alice")

	cases := []struct {
		name      string
		plaintext string
		principal string // empty: refused
		looksUp   bool   // whether the store is asked
		reason    string // in the refusal's cause
	}{
		{"valid", good, "alice", true, ""},
		{"empty", "", "", false, "starts with sbx_"},
		{"no prefix", "good_key_0123456789abcd", "", false, "starts with sbx_"},
		{"prefix in another case", "SBX_good_key_0123456789", "", false, "starts with sbx_"},
		{"prefix only", "sbx_", "", false, "16 to 252"},
		{"too short", "sbx_0123456789abcde", "", false, "16 to 252"},
		{"shortest", "sbx_0123456789abcdef", "", true, "unknown key"},
		{"longest", "sbx_" + strings.Repeat("a", MaxAPIKeyLen-4), "", true, "unknown key"},
		{"too long", "sbx_" + strings.Repeat("a", MaxAPIKeyLen-3), "", false, "16 to 252"},
		{"space inside", "sbx_good key_0123456789", "", false, "A-Z a-z 0-9 - _"},
		{"scheme left in", "Bearer " + good, "", false, "starts with sbx_"},
		{"unknown", "sbx_unknown_0123456789", "", true, "unknown key"},
		{"revoked", revoked, "", true, "revoked"},
		{"another tenant's", foreign, "", true, "another tenant"},
		{"no principal", anonymous, "", true, "no principal"},
		{"store answered another record", mismatch, "", true, "another record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := keys.lookups
			k, err := VerifyAPIKey(context.Background(), keys, "acme", c.plaintext)
			if looked := keys.lookups > before; looked != c.looksUp {
				t.Errorf("store asked: %v, want %v", looked, c.looksUp)
			}
			if c.principal != "" {
				if err != nil || k.Principal != c.principal || k.Tenant != "acme" {
					t.Fatalf("got %+v, %v", k, err)
				}
				return
			}
			var se *Error
			if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &se) {
				t.Fatalf("got %+v, %v; want ErrUnauthorized", k, err)
			}
			// One detail for every refusal; the reason is for logs only.
			if se.Detail != "invalid or revoked API key" || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("detail %q, error %q; want the reason %q", se.Detail, err, c.reason)
			}
			if strings.Contains(err.Error(), c.plaintext) && len(c.plaintext) > 10 {
				t.Fatalf("the refusal holds the whole key: %v", err)
			}
		})
	}
}

func TestVerifyAPIKeyFailures(t *testing.T) {
	t.Parallel()
	down := &keyMap{err: Errorf(ErrUnavailable, "store down")}
	_, err := VerifyAPIKey(context.Background(), down, "acme", "sbx_good_key_0123456789")
	if err == nil || errors.Is(err, ErrUnauthorized) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an outage must not read as a bad key: %v", err)
	}
	_, err = VerifyAPIKey(context.Background(), &keyMap{}, "", "sbx_good_key_0123456789")
	if err == nil || errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "no tenant") {
		t.Fatalf("without a tenant: %v", err)
	}
	// The Manager without a tenant says so rather than refusing every key.
	m, err := NewManager(Config{}, Deps{Store: newFakeStore(newFakeClock()), Sandboxes: newFakeSandboxes(newFakeClock())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Authenticate(context.Background(), "sbx_good_key_0123456789"); err == nil || errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Manager without a tenant: %v", err)
	}
}
