package session

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestAPIKeys(t *testing.T) {
	r := newRig(t, Config{})
	ctx := context.Background()
	plain, k, err := NewAPIKey("acme", "alice", r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, "sbx_") || len(plain) != 4+43 || !strings.HasPrefix(plain, k.Prefix) {
		t.Fatalf("key %q prefix %q", plain, k.Prefix)
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
