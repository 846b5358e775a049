package api

import (
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// keyCacheSize bounds the keys remembered; past it the cache starts afresh,
// which costs one lookup per key.
const keyCacheSize = 4096

// keyCache remembers keys that authenticated, by hash, for a short time:
// what API Gateway's authorizer cache does in front of the Lambda
// functions, so local mode spends no store read per request on a known key.
// Refusals are never cached, and a revoked key stops working within the TTL.
type keyCache struct {
	ttl time.Duration

	mu      sync.Mutex
	entries map[string]keyEntry
}

type keyEntry struct {
	id      identity
	expires time.Time
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, entries: map[string]keyEntry{}}
}

func (c *keyCache) get(key string, now time.Time) (identity, bool) {
	h := session.HashAPIKey(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	if !ok || now.After(e.expires) {
		return identity{}, false
	}
	return e.id, true
}

func (c *keyCache) put(key string, id identity, now time.Time) {
	h := session.HashAPIKey(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= keyCacheSize {
		clear(c.entries)
	}
	c.entries[h] = keyEntry{id: id, expires: now.Add(c.ttl)}
}
