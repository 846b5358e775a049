package session

import (
	"context"
	"sync"
	"time"
)

// RequestRate is how many API requests one principal may make: PerSecond
// on average, up to Burst at once. The stage's own throttle is shared by
// every caller; this one keeps a single key from taking all of it.
type RequestRate struct {
	// PerSecond is the sustained rate (default 20).
	PerSecond int
	// Burst is the most requests admitted at once (default 2×PerSecond).
	Burst int
}

// WithDefaults fills what is unset.
func (r RequestRate) WithDefaults() RequestRate {
	if r.PerSecond <= 0 {
		r.PerSecond = 20
	}
	if r.Burst <= 0 {
		r.Burst = 2 * r.PerSecond
	}
	if r.Burst < r.PerSecond {
		r.Burst = r.PerSecond
	}
	return r
}

// Window is the fixed window that holds now: Burst requests are admitted
// per window of Burst/PerSecond seconds (whole seconds, at least one), so
// the long-run rate is PerSecond and a quiet key may spend the burst at
// once. A window starts at a multiple of its length since the Unix epoch,
// so every function instance counts in the same one.
func (r RequestRate) Window(now time.Time) (start time.Time, length time.Duration) {
	r = r.WithDefaults()
	secs := int64((r.Burst + r.PerSecond - 1) / r.PerSecond)
	length = time.Duration(secs) * time.Second
	return time.Unix(now.Unix()/secs*secs, 0), length
}

// RateLimiter counts requests per key (a tenant's principal) in fixed
// windows of a RequestRate.
type RateLimiter interface {
	// Take counts one request of key at now. When the key's window is
	// full it reports ok=false and how long until the next window opens.
	Take(ctx context.Context, key string, now time.Time) (ok bool, retryAfter time.Duration, err error)
}

// MemoryRateLimiter is a RateLimiter in one process's memory: local serve
// has one process, so its count is the whole count.
type MemoryRateLimiter struct {
	rate RequestRate
	mu   sync.Mutex
	keys map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// NewMemoryRateLimiter counts at rate.
func NewMemoryRateLimiter(rate RequestRate) *MemoryRateLimiter {
	return &MemoryRateLimiter{rate: rate.WithDefaults(), keys: map[string]*window{}}
}

// Take implements RateLimiter.
func (l *MemoryRateLimiter) Take(_ context.Context, key string, now time.Time) (bool, time.Duration, error) {
	start, length := l.rate.Window(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil || !w.start.Equal(start) {
		l.prune(start)
		w = &window{start: start}
		l.keys[key] = w
	}
	if w.n >= l.rate.Burst {
		return false, start.Add(length).Sub(now), nil
	}
	w.n++
	return true, 0, nil
}

// prune drops the counts of past windows once there are many keys, so
// memory stays bounded by the keys active in one window.
func (l *MemoryRateLimiter) prune(current time.Time) {
	if len(l.keys) < 1024 {
		return
	}
	for k, w := range l.keys {
		if w.start.Before(current) {
			delete(l.keys, k)
		}
	}
}
