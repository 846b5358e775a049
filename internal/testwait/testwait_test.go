package testwait

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	Until(t, time.Minute, func() error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls.Load() != 3 {
		t.Fatalf("cond ran %d times, want 3", calls.Load())
	}
}

func TestPollTimesOut(t *testing.T) {
	t.Parallel()
	notYet := errors.New("still not")
	start := time.Now()
	err := Poll(t, 50*time.Millisecond, func() error { return notYet })
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, notYet) || te.After != 50*time.Millisecond {
		t.Fatalf("Poll = %v, want a TimeoutError after 50ms wrapping the last error", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
		t.Fatalf("Poll gave up after %v, want just past 50ms", took)
	}
}
