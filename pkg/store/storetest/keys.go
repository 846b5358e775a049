package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func apiKey(secret, principal string, created time.Time) *session.APIKey {
	sum := sha256.Sum256([]byte(secret))
	return &session.APIKey{
		Hash: hex.EncodeToString(sum[:]), Prefix: secret[:6],
		Tenant: "acme", Principal: principal, CreatedAt: created,
	}
}

func testAPIKeys(t *testing.T, env Env, clock *testclock.Clock) {
	st, ctx := env.Store, t.Context()
	now := clock.Now()
	keys := []*session.APIKey{
		apiKey("sbk_alice_secret", "alice", now.Add(-2*time.Hour)),
		apiKey("sbk_bob_secret", "bob", now.Add(-time.Hour)),
		apiKey("sbk_carol_secret", "carol", now),
	}
	for _, k := range keys {
		if err := st.PutAPIKey(ctx, k); err != nil {
			t.Fatalf("PutAPIKey(%s): %v", k.Prefix, err)
		}
	}
	again := *keys[0]
	again.Principal = "mallory"
	wantErr(t, "put an existing hash", st.PutAPIKey(ctx, &again), session.ErrConflict)

	got, err := st.GetAPIKey(ctx, keys[0].Hash)
	if err != nil || !reflect.DeepEqual(got, keys[0]) {
		t.Fatalf("GetAPIKey: %+v, %v; want %+v", got, err, keys[0])
	}
	unknown := apiKey("sbk_nobody", "nobody", now)
	_, err = st.GetAPIKey(ctx, unknown.Hash)
	wantErr(t, "get unknown key", err, session.ErrNotFound)

	revokedAt := now.Add(time.Minute)
	if err := st.RevokeAPIKey(ctx, keys[1].Hash, revokedAt); err != nil {
		t.Fatalf("RevokeAPIKey: %v", err)
	}
	wantErr(t, "revoke unknown key", st.RevokeAPIKey(ctx, unknown.Hash, revokedAt), session.ErrNotFound)
	got, err = st.GetAPIKey(ctx, keys[1].Hash)
	if err != nil || !got.Revoked() || !got.RevokedAt.Equal(revokedAt) || got.Principal != "bob" {
		t.Fatalf("revoked key: %+v, %v", got, err)
	}

	listed, err := st.ListAPIKeys(ctx)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	keys[1].RevokedAt = revokedAt
	slices.SortFunc(listed, func(a, b *session.APIKey) int { return strings.Compare(a.Prefix, b.Prefix) })
	if !reflect.DeepEqual(listed, keys) {
		t.Fatalf("ListAPIKeys:\n got %v\nwant %v", listed, keys)
	}
}
