package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// APIKeyPrefix starts every API key, so leaked keys are easy to scan for.
const APIKeyPrefix = "sbx_"

// apiKeyRandomBytes is the key's entropy: 256 bits.
const apiKeyRandomBytes = 32

// apiKeyPrefixLen is how much of a key is kept in clear to tell keys apart.
const apiKeyPrefixLen = len(APIKeyPrefix) + 6

// NewAPIKey makes a key for a principal of a tenant. The plaintext is shown
// once; the returned record holds only its hash, ready for Store.PutAPIKey.
func NewAPIKey(tenant, principal string, now time.Time) (string, *APIKey, error) {
	if err := validateName("tenant", tenant); err != nil {
		return "", nil, err
	}
	if err := validateName("principal", principal); err != nil {
		return "", nil, err
	}
	b := make([]byte, apiKeyRandomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("generate API key: %w", err)
	}
	plain := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return plain, &APIKey{
		Hash: HashAPIKey(plain), Prefix: plain[:apiKeyPrefixLen],
		Tenant: tenant, Principal: principal, CreatedAt: now,
	}, nil
}

// HashAPIKey is the hex SHA-256 under which a key is stored. The key has
// 256 bits of entropy, so a fast hash is enough: nothing to brute-force.
func HashAPIKey(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

// Authenticate finds the valid key for plaintext; ErrUnauthorized for an
// unknown, malformed or revoked key, with the same detail for each.
func (m *Manager) Authenticate(ctx context.Context, plaintext string) (*APIKey, error) {
	denied := Errorf(ErrUnauthorized, "invalid or revoked API key")
	if !strings.HasPrefix(plaintext, APIKeyPrefix) || len(plaintext) > 256 {
		return nil, denied
	}
	hash := HashAPIKey(plaintext)
	k, err := m.store.GetAPIKey(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return nil, denied
	} else if err != nil {
		return nil, fmt.Errorf("look up API key: %w", err)
	}
	// The lookup was by hash; compare in constant time anyway, so a store
	// that matched loosely cannot let a different key in.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || k.Revoked() {
		return nil, denied
	}
	return k, nil
}
