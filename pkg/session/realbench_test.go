package session_test

import (
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// BenchmarkRealStoreExecute is an execute through the Manager on the real
// DynamoDB store (emulator over HTTP) with a fake provider: the store's
// share of an execute, and its calls per execute. The clock moves 1s per
// execute, so activity is written once per 30.
func BenchmarkRealStoreExecute(b *testing.B) {
	r := newRealRig(b, session.Config{DisableArtifacts: true})
	ctx := b.Context()
	if _, err := r.m.Start(ctx, key, session.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	r.store.reads.Store(0)
	r.store.writes.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.clock.Advance(time.Second)
		if _, err := r.m.Execute(ctx, key, session.ExecRequest{Code: "print x"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(r.store.reads.Load())/float64(b.N), "store-reads/op")
	b.ReportMetric(float64(r.store.writes.Load())/float64(b.N), "store-writes/op")
}
