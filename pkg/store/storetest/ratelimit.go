package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// LimiterFactory makes a fresh, empty RateLimiter counting at rate.
type LimiterFactory func(t *testing.T, rate session.RequestRate) session.RateLimiter

// RunRateLimiter is the contract every session.RateLimiter must meet.
func RunRateLimiter(t *testing.T, newLimiter LimiterFactory) {
	rate := session.RequestRate{PerSecond: 2, Burst: 4} // windows of 2 s, 4 requests each
	ctx := context.Background()
	// A window's start: epoch is a whole number of 2 s windows.
	start := epoch
	take := func(t *testing.T, l session.RateLimiter, key string, at time.Time) (bool, time.Duration) {
		t.Helper()
		ok, retry, err := l.Take(ctx, key, at)
		if err != nil {
			t.Fatalf("Take(%s): %v", key, err)
		}
		return ok, retry
	}
	t.Run("BurstThenRefusedUntilNextWindow", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t, rate)
		for i := range 4 {
			if ok, _ := take(t, l, "acme/alice", start.Add(time.Duration(i)*100*time.Millisecond)); !ok {
				t.Fatalf("request %d of the burst refused", i+1)
			}
		}
		ok, retry := take(t, l, "acme/alice", start.Add(1500*time.Millisecond))
		if ok || retry != 500*time.Millisecond {
			t.Fatalf("fifth request in the window: ok=%v retry after %v, want refused, 500ms", ok, retry)
		}
		if ok, _ := take(t, l, "acme/bob", start.Add(1500*time.Millisecond)); !ok {
			t.Fatal("another principal was refused for alice's count")
		}
		if ok, _ := take(t, l, "acme/alice", start.Add(2*time.Second)); !ok {
			t.Fatal("the next window refused alice")
		}
	})
	t.Run("ConcurrentTakesAdmitTheBurstExactly", func(t *testing.T) {
		t.Parallel()
		l := newLimiter(t, rate)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				ok, _, err := l.Take(ctx, "acme/carol", start.Add(time.Second))
				if err != nil {
					t.Error(err)
				}
				if ok {
					admitted.Add(1)
				}
			})
		}
		wg.Wait()
		if n := admitted.Load(); n != 4 {
			t.Fatalf("%d of 12 concurrent requests admitted, want the burst, 4", n)
		}
	})
}
