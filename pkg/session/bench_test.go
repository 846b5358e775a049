package session

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkExecute measures the Manager's own cost per execute on fakes,
// and the store calls each one makes. The clock moves 1s per execute, a
// busy session: activity is written once per ActivityWriteInterval (30s).
func BenchmarkExecute(b *testing.B) {
	for _, bc := range []struct {
		name      string
		artifacts bool
	}{{"no-artifacts", false}, {"artifacts", true}} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRig(b, Config{DisableArtifacts: !bc.artifacts})
			ctx := context.Background()
			if _, err := r.m.Start(ctx, testKey, StartOptions{}); err != nil {
				b.Fatal(err)
			}
			req := ExecRequest{Code: "print x"}
			r.store.reads.Store(0)
			r.store.writes.Store(0)
			lists := r.sbx.count("ListFiles")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r.clock.Advance(time.Second)
				if _, err := r.m.Execute(ctx, testKey, req, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(r.store.reads.Load())/n, "store-reads/op")
			b.ReportMetric(float64(r.store.writes.Load())/n, "store-writes/op")
			b.ReportMetric(float64(r.sbx.count("ListFiles")-lists)/n, "file-lists/op")
		})
	}
}

// BenchmarkExecuteParallel runs executes on many sessions at once.
func BenchmarkExecuteParallel(b *testing.B) {
	r := newRig(b, Config{DisableArtifacts: true, MaxLiveSandboxesPerTenant: 100})
	ctx := context.Background()
	keys := make([]Key, 64)
	for i := range keys {
		keys[i] = Key{Tenant: "acme", Principal: "alice", SessionID: fmt.Sprint("s", i)}
		if _, err := r.m.Start(ctx, keys[i], StartOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	r.store.reads.Store(0)
	r.store.writes.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := r.m.Execute(ctx, keys[i%len(keys)], ExecRequest{Code: "print x"}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(r.store.reads.Load())/float64(b.N), "store-reads/op")
	b.ReportMetric(float64(r.store.writes.Load())/float64(b.N), "store-writes/op")
}
