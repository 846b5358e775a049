package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestRateLimitPerPrincipal: past its burst a principal gets a 429 problem
// with Retry-After and the CORS headers a browser needs to read it; another
// principal of the tenant and the public routes are untouched.
func TestRateLimitPerPrincipal(t *testing.T) {
	t.Parallel()
	// Windows of 2 s holding 2 requests: five quick requests cross at most
	// one window boundary, so at least one is refused.
	h := newHarness(t, WithRateLimiter(session.NewMemoryRateLimiter(session.RequestRate{PerSecond: 1, Burst: 2})),
		WithAllowedOrigins("https://app.example"))
	origin := map[string]string{"Origin": "https://app.example"}
	var refused *http.Response
	var body []byte
	for range 5 {
		res, b := h.do(call{method: "GET", path: "/v1/sessions", headers: origin})
		if res.StatusCode == http.StatusTooManyRequests {
			refused, body = res, b
			break
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", res.StatusCode, b)
		}
	}
	if refused == nil {
		t.Fatal("five requests in a row were all admitted at 2 per 2 s")
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil || p["type"] != "https://sessionbox.dev/problems/limit-reached" || p["status"] != 429.0 {
		t.Fatalf("429 body %s (%v)", body, err)
	}
	if secs, err := strconv.Atoi(refused.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 2 {
		t.Fatalf("Retry-After %q, want 1 or 2 s", refused.Header.Get("Retry-After"))
	}
	if refused.Header.Get("Content-Type") != contentTypeProblem || refused.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("429 headers %v", refused.Header)
	}
	if res, b := h.do(call{method: "GET", path: "/v1/sessions", key: keyBob}); res.StatusCode != http.StatusOK {
		t.Fatalf("bob refused for alice's rate: %d %s", res.StatusCode, b)
	}
	if res, b := h.do(call{method: "GET", path: "/healthz", key: "-"}); res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d %s", res.StatusCode, b)
	}
}

type failingLimiter struct{}

func (failingLimiter) Take(context.Context, string, time.Time) (bool, time.Duration, error) {
	return false, 0, errors.New("table unreachable")
}

// TestRateLimiterFailureAdmits: a limiter that cannot count lets requests
// through rather than refusing everyone.
func TestRateLimiterFailureAdmits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, WithRateLimiter(failingLimiter{}))
	if res, b := h.do(call{method: "GET", path: "/v1/sessions"}); res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
}
