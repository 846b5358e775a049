package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Advance(time.Second) })
	}
	wg.Wait()
	if got := c.Now().Sub(start); got != 10*time.Second {
		t.Fatalf("after ten concurrent advances of 1 s the clock moved %v", got)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("after Set, Now = %v", c.Now())
	}
}
