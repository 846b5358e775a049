package sessionenv

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Bounds on re-reading the E2B key's secret: at most once per
// minRereadInterval, backing off to maxRereadInterval while the secret
// still holds a key E2B refuses.
const (
	minRereadInterval = 30 * time.Second
	maxRereadInterval = 15 * time.Minute
)

// keyRotator sends control-plane requests with the current E2B key and, when
// E2B answers 401, re-reads the key's secret: a rotated key takes effect in
// warm execution environments (the reaper's, every minute, never goes
// cold), not only in new ones. A request refused with the old key is sent
// once more with a new one.
type keyRotator struct {
	base http.RoundTripper
	read func(ctx context.Context) (string, error)
	now  func() time.Time
	log  *slog.Logger

	mu   sync.Mutex
	key  string
	next time.Time     // earliest next re-read
	wait time.Duration // the current back-off
}

func (k *keyRotator) current() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.key
}

// RoundTrip leaves sandbox traffic (no X-API-Key) alone.
func (k *keyRotator) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-API-Key") == "" {
		return k.base.RoundTrip(req)
	}
	used := k.current()
	first := req.Clone(req.Context())
	first.Header.Set("X-API-Key", used)
	resp, err := k.base.RoundTrip(first)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	key, changed := k.reread(req.Context(), used)
	if !changed || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		retry.Body = body
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	retry.Header.Set("X-API-Key", key)
	return k.base.RoundTrip(retry)
}

// reread returns a key other than used when there is one: another request
// already read it, or the secret now holds it. Reads are spaced out.
func (k *keyRotator) reread(ctx context.Context, used string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != used {
		return k.key, true
	}
	now := k.now()
	if now.Before(k.next) {
		return used, false
	}
	v, err := k.read(ctx)
	if err != nil || v == used {
		k.wait = min(max(2*k.wait, minRereadInterval), maxRereadInterval)
		k.next = now.Add(k.wait)
		k.log.ErrorContext(ctx, "E2B refused the API key and its secret holds no other usable one",
			"nextReadIn", k.wait.String(), "error", err)
		return used, false
	}
	k.key, k.wait, k.next = v, 0, now.Add(minRereadInterval)
	k.log.InfoContext(ctx, "E2B API key re-read from its secret after a refusal")
	return v, true
}
