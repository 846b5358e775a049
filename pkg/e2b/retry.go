package e2b

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// retryable reports whether a failed attempt may be repeated and how long
// the server asked to wait.
func retryable(err error) (bool, time.Duration) {
	var e *Error
	if errors.As(err, &e) {
		if errors.Is(e, ErrSandboxNotFound) {
			return false, 0
		}
		switch e.StatusCode {
		case http.StatusTooManyRequests:
			return true, e.RetryAfter
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, e.RetryAfter
		}
		if e.StatusCode == 0 && (errors.Is(e, ErrUnavailable) || errors.Is(e, ErrRateLimited)) {
			return true, e.RetryAfter
		}
		return e.StatusCode == 0 && isConnReset(e.err), 0
	}
	return isConnReset(err), 0
}

// isConnReset matches connections dropped by the peer, the failure a retry
// on a fresh connection usually fixes.
func isConnReset(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF))
}

// backoff is the delay before retry number n (1-based): exponential with
// jitter between half and the full step, at least the server's Retry-After.
func (p RetryPolicy) backoff(n int, retryAfter time.Duration) time.Duration {
	step := p.BaseDelay << (n - 1)
	if step <= 0 || step > p.MaxDelay {
		step = p.MaxDelay
	}
	d := step/2 + rand.N(step/2+1)
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

// withRetry runs attempt until it succeeds, fails permanently, the attempts
// are used up or ctx ends. Non-idempotent calls get exactly one attempt.
func (c *Client) withRetry(ctx context.Context, idempotent bool, attempt func(context.Context) error) error {
	max := c.cfg.Retry.MaxAttempts
	if !idempotent {
		max = 1
	}
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil || n >= max {
			return err
		}
		ok, after := retryable(err)
		if !ok {
			return err
		}
		d := c.cfg.Retry.backoff(n, after)
		if dl, has := ctx.Deadline(); has && time.Until(dl) < d {
			return err // waiting would outlive the caller; report the real failure
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// parseRetryAfter reads a Retry-After header in seconds or HTTP-date form.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// withRateLimitRetry runs a call that must not be repeated after any
// failure but a 429 (a create): it retries 429s with the backoff, waiting
// at least the server's Retry-After, until the total wait would pass
// RetryPolicy.MaxRateLimitWait or ctx's deadline. E2B answers 429 both for
// its create rate and for a team at its concurrent sandboxes; the second
// sends no Retry-After and clears only when a sandbox ends, so the bound
// keeps a full team from holding the caller for long.
func (c *Client) withRateLimitRetry(ctx context.Context, attempt func(context.Context) error) error {
	var waited time.Duration
	for n := 1; ; n++ {
		err := attempt(ctx)
		var e *Error
		if err == nil || !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests {
			return err
		}
		d := c.cfg.Retry.backoff(n, e.RetryAfter)
		if waited+d > c.cfg.Retry.MaxRateLimitWait {
			return err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < d {
			return err // waiting would outlive the caller; report the 429
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		waited += d
	}
}
