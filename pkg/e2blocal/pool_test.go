//go:build linux

package e2blocal

import (
	"sync"
	"testing"
	"time"
)

func TestDemandMeter(t *testing.T) {
	t.Parallel()
	const window = time.Minute
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var d demandMeter
	if got := d.peak(t0, window); got != 0 {
		t.Fatalf("peak before any create: %d", got)
	}
	for i := range 6 { // a burst of six within a second
		d.record(t0.Add(time.Duration(i)*100*time.Millisecond), window)
	}
	for i := range 3 { // then creates far apart
		d.record(t0.Add(time.Duration(10+5*i)*time.Second), window)
	}
	if got := d.peak(t0.Add(30*time.Second), window); got != 6 {
		t.Fatalf("peak within the window: %d, want 6", got)
	}
	if got := d.peak(t0.Add(2*window), window); got != 0 {
		t.Fatalf("peak after the window: %d, want 0", got)
	}
	d.record(t0.Add(2*window), window)
	if got := d.peak(t0.Add(2*window), window); got != 1 {
		t.Fatalf("peak after a lone create past the window: %d, want 1", got)
	}
}

// TestPoolFollowsDemand: after a burst of creates the pool grows to the
// burst (up to WarmPoolMax), so the next burst finds its trees spawned, and
// shrinks back to WarmPool once the window passes without another.
func TestPoolFollowsDemand(t *testing.T) {
	rt := startRuntime(t, Config{WarmPool: 1, WarmPoolMax: 3, WarmPoolWindow: 3 * time.Second})
	waitPool := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(rt.pool) != want {
			if time.Now().After(deadline) {
				t.Fatalf("pool holds %d trees, want %d", len(rt.pool), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPool(1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { createSandbox(t, rt, nil) })
	}
	wg.Wait()
	if got := rt.poolTarget(time.Now()); got != 3 {
		t.Fatalf("target after a burst of 4: %d, want WarmPoolMax 3", got)
	}
	waitPool(3)
	time.Sleep(3 * time.Second)
	waitPool(1)
}
