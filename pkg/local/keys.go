package local

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// ParseKeys reads a SESSIONBOX_API_KEYS value: comma-separated keys, each
// optionally named `principal=key`; unnamed keys become principals key1,
// key2, and so on in order. Keys start with session.APIKeyPrefix, like the
// ones the service makes.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k := Key{Principal: "key" + strconv.Itoa(i+1), Secret: part}
		if name, secret, ok := strings.Cut(part, "="); ok {
			k = Key{Principal: strings.TrimSpace(name), Secret: strings.TrimSpace(secret)}
		}
		if k.Principal == "" {
			return nil, fmt.Errorf("API key %d: want [principal=]%s<key>", i+1, session.APIKeyPrefix)
		}
		if err := session.CheckAPIKeyShape(k.Secret); err != nil {
			return nil, fmt.Errorf("API key %d: %w", i+1, err)
		}
		if seen[k.Secret] {
			return nil, fmt.Errorf("API key %d is given twice", i+1)
		}
		seen[k.Secret] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// NewKey makes a fresh key for principal.
func NewKey(principal string) (Key, error) {
	secret, _, err := session.NewAPIKey("local", principal, time.Now())
	if err != nil {
		return Key{}, err
	}
	return Key{Principal: principal, Secret: secret}, nil
}

// seedKeys makes the stored keys of the tenant exactly the configured ones:
// new keys are added, and keys kept from an earlier start that are no longer
// configured (a key generated before, one removed after a leak) are revoked.
func seedKeys(ctx context.Context, st *store.Store, tenant string, keys []Key) error {
	want := map[string]Key{}
	for _, k := range keys {
		want[session.HashAPIKey(k.Secret)] = k
	}
	stored, err := st.ListAPIKeys(ctx)
	if err != nil {
		return fmt.Errorf("list stored API keys: %w", err)
	}
	now := time.Now()
	have := map[string]bool{}
	for _, rec := range stored {
		if rec.Tenant != tenant || rec.Revoked() {
			continue
		}
		k, ok := want[rec.Hash]
		switch {
		case !ok:
			if err := st.RevokeAPIKey(ctx, rec.Hash, now); err != nil {
				return fmt.Errorf("revoke API key %s: %w", rec.Prefix, err)
			}
		case k.Principal != rec.Principal:
			return fmt.Errorf("API key %s belongs to principal %q, not %q: give it a new key instead", rec.Prefix, rec.Principal, k.Principal)
		default:
			have[rec.Hash] = true
		}
	}
	for hash, k := range want {
		if have[hash] {
			continue
		}
		rec := &session.APIKey{Hash: hash, Prefix: prefix(k.Secret), Tenant: tenant, Principal: k.Principal, CreatedAt: now}
		if err := st.PutAPIKey(ctx, rec); err != nil {
			// A conflict here is a key revoked earlier and configured
			// again: revocation is final.
			return fmt.Errorf("store API key for %s: %w", k.Principal, err)
		}
	}
	return nil
}

// prefix keeps as much of a key in clear as the service's own keys do.
func prefix(secret string) string { return secret[:len(session.APIKeyPrefix)+6] }
