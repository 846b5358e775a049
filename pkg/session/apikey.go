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

// Shape of an API key: APIKeyPrefix, then MinAPIKeySecret to
// MaxAPIKeyLen-len(APIKeyPrefix) characters of the base64url alphabet
// (A-Z a-z 0-9 - _). Generated keys have 43 after the prefix.
const (
	MinAPIKeySecret = 16
	MaxAPIKeyLen    = 256
)

// CheckAPIKeyShape says why plaintext cannot be an API key, or nil. Keys
// configured by hand (serve's SESSIONBOX_API_KEYS) are held to it, so no key
// is accepted at configuration that VerifyAPIKey would refuse.
func CheckAPIKeyShape(plaintext string) error {
	secret, ok := strings.CutPrefix(plaintext, APIKeyPrefix)
	switch {
	case !ok:
		return fmt.Errorf("an API key starts with %s", APIKeyPrefix)
	case len(secret) < MinAPIKeySecret || len(plaintext) > MaxAPIKeyLen:
		return fmt.Errorf("an API key is %s and %d to %d characters", APIKeyPrefix, MinAPIKeySecret, MaxAPIKeyLen-len(APIKeyPrefix))
	case strings.ContainsFunc(secret, notBase64URL):
		return fmt.Errorf("an API key is %s and characters of A-Z a-z 0-9 - _", APIKeyPrefix)
	}
	return nil
}

func notBase64URL(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

// APIKeyGetter looks stored API keys up by hash; Store satisfies it.
type APIKeyGetter interface {
	GetAPIKey(ctx context.Context, hash string) (*APIKey, error)
}

// VerifyAPIKey is the one check of an API key, shared by the Lambda
// authorizer and the API served locally (through Manager.Authenticate): its
// shape, then its stored record by hash, which must be unrevoked, of tenant
// and name a principal. Every refusal is ErrUnauthorized with the same
// detail, so a caller learns nothing about other tenants' keys; the reason
// is in the error's cause, for logs. A failed lookup is returned as it is:
// an outage is not a bad key.
func VerifyAPIKey(ctx context.Context, keys APIKeyGetter, tenant, plaintext string) (*APIKey, error) {
	if tenant == "" {
		return nil, errors.New("verify API key: no tenant configured")
	}
	deny := func(reason error) error {
		return &Error{Kind: ErrUnauthorized, Detail: "invalid or revoked API key", Err: reason}
	}
	if err := CheckAPIKeyShape(plaintext); err != nil {
		return nil, deny(err)
	}
	hash := HashAPIKey(plaintext)
	k, err := keys.GetAPIKey(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, deny(fmt.Errorf("unknown key %s", plaintext[:apiKeyPrefixLen]))
	case err != nil:
		return nil, fmt.Errorf("look up API key: %w", err)
	// The lookup was by hash; compare in constant time anyway, so a store
	// that matched loosely cannot let a different key in.
	case k == nil || subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1:
		return nil, deny(fmt.Errorf("the store answered key %s with another record", plaintext[:apiKeyPrefixLen]))
	case k.Revoked():
		return nil, deny(fmt.Errorf("key %s was revoked", k.Prefix))
	case k.Tenant != tenant:
		return nil, deny(fmt.Errorf("key %s is for another tenant", k.Prefix))
	case k.Principal == "":
		return nil, deny(fmt.Errorf("key %s names no principal", k.Prefix))
	}
	return k, nil
}

// Authenticate is VerifyAPIKey against the Manager's store and tenant.
func (m *Manager) Authenticate(ctx context.Context, plaintext string) (*APIKey, error) {
	return VerifyAPIKey(ctx, m.store, m.cfg.Tenant, plaintext)
}
