package session

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartRemoteLatency is a new session's start on fakes that take
// as long as the production services: every store call storeRTT (DynamoDB,
// ~3–10 ms), a create createRTT (E2B). "slot-first" takes the slot before
// the create, as a start does knowing nothing of the tenant's cap;
// "overlapped" takes it during the create, as one does far from the cap.
// Each start is stopped after it is measured (the stop is not timed).
func BenchmarkStartRemoteLatency(b *testing.B) {
	const storeRTT, createRTT = 5 * time.Millisecond, 100 * time.Millisecond
	for _, overlap := range []bool{false, true} {
		name := "slot-first"
		if overlap {
			name = "overlapped"
		}
		b.Run(name, func(b *testing.B) {
			r := newRig(b, Config{})
			ctx := context.Background()
			r.mustStart(b, ctx, Key{Tenant: "acme", Principal: "alice", SessionID: "warm-up"}, StartOptions{})
			r.store.delay = storeRTT
			r.sbx.delay = createRTT
			samples := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				b.StopTimer()
				if !overlap {
					r.m.caps = capView{}
				}
				k := Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("s", i)}
				i++
				b.StartTimer()
				t0 := time.Now()
				if _, err := r.m.Start(ctx, k, StartOptions{}); err != nil {
					b.Fatal(err)
				}
				samples = append(samples, time.Since(t0))
				b.StopTimer()
				if _, err := r.m.Stop(ctx, k); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(samples)
			at := func(q float64) float64 {
				return float64(samples[int(q*float64(len(samples)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(at(0.5), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}
