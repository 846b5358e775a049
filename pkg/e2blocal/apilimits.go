//go:build linux

package e2blocal

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// E2B's plan limits, as its API answers them (e2b-dev/infra, packages/api):
// a timeout past the team's maximum sandbox length is a 400 "Timeout cannot
// be greater than N hours" (create, connect, resume); the team's create rate
// a 429 "Rate limit exceeded" with Retry-After (whole seconds, at least 1);
// its concurrent sandboxes a 429 naming the cap, without Retry-After.

// hiddenRoutes are the control-plane routes an older E2B lacks.
func hiddenRoutes(old string) (map[string]bool, error) {
	v2 := map[string]bool{"POST /v2/sandboxes": true, "POST /v2/sandboxes/{id}/connect": true}
	switch old {
	case "":
		return nil, nil
	case OldAPIV1:
		return v2, nil
	case OldAPIResume:
		v2["POST /sandboxes/{id}/connect"] = true
		return v2, nil
	}
	return nil, fmt.Errorf("e2blocal: OldAPI %q: want %q, %q or empty", old, OldAPIV1, OldAPIResume)
}

// maxLifetime is the longest timeout the runtime grants.
func (rt *Runtime) maxLifetime() time.Duration {
	if rt.cfg.MaxLifetime > 0 {
		return rt.cfg.MaxLifetime
	}
	return maxTimeout
}

// lifetimeError is E2B's 400 for a timeout past the plan's maximum. E2B
// counts its limit in whole hours; shorter test limits are named in seconds.
func lifetimeError(max time.Duration) string {
	if max%time.Hour == 0 {
		return fmt.Sprintf("Timeout cannot be greater than %d hours", int64(max/time.Hour))
	}
	return fmt.Sprintf("Timeout cannot be greater than %d seconds", int64(max/time.Second))
}

// tooManySandboxes is E2B's 429 body for a team at its concurrent sandboxes.
func tooManySandboxes(n int) string {
	return fmt.Sprintf("you have reached the maximum number of concurrent E2B sandboxes (%d). "+
		"If you need more, please visit 'https://e2b.dev/docs/billing'", n)
}

// createRate is a token bucket of creates per second (burst: one
// second's worth, at least one), shared by both create endpoints.
type createRate struct {
	perSec float64
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newCreateRate(perSec float64) *createRate {
	if perSec <= 0 {
		return nil
	}
	return &createRate{perSec: perSec, tokens: burst(perSec)}
}

func burst(perSec float64) float64 { return math.Max(1, math.Floor(perSec)) }

// take spends a token, or says how long until one is there.
func (c *createRate) take(now time.Time) (ok bool, wait time.Duration) {
	if c == nil {
		return true, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.last.IsZero() {
		c.tokens = math.Min(burst(c.perSec), c.tokens+now.Sub(c.last).Seconds()*c.perSec)
	}
	c.last = now
	if c.tokens >= 1 {
		c.tokens--
		return true, 0
	}
	return false, time.Duration((1 - c.tokens) / c.perSec * float64(time.Second))
}

// refuseRate answers E2B's 429 when the create rate is spent, and reports
// whether it did.
func (c *createRate) refuseRate(w http.ResponseWriter) bool {
	ok, wait := c.take(time.Now())
	if ok {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	writeError(w, http.StatusTooManyRequests, "Rate limit exceeded")
	return true
}
