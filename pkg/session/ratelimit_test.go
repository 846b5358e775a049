package session_test

import (
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store/storetest"
)

func TestMemoryRateLimiterContract(t *testing.T) {
	t.Parallel()
	storetest.RunRateLimiter(t, func(t *testing.T, rate session.RequestRate) session.RateLimiter {
		return session.NewMemoryRateLimiter(rate)
	})
}

func TestRequestRateWindow(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_000_001, 500_000_000)
	for _, c := range []struct {
		rate       session.RequestRate
		start, len int64
	}{
		{session.RequestRate{}, 1_000_000, 2},                         // defaults: 20/s, burst 40
		{session.RequestRate{PerSecond: 10, Burst: 10}, 1_000_001, 1}, // no burst beyond the rate
		{session.RequestRate{PerSecond: 3, Burst: 10}, 1_000_000, 4},  // 10/3 rounds up to 4 s
		{session.RequestRate{PerSecond: 10, Burst: 1}, 1_000_001, 1},  // a burst below the rate is the rate
	} {
		start, length := c.rate.Window(at)
		if start.Unix() != c.start || length != time.Duration(c.len)*time.Second {
			t.Errorf("%+v: window %d+%v, want %d+%ds", c.rate, start.Unix(), length, c.start, c.len)
		}
	}
}
