package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// BenchmarkWorkspace measures, per workspace size and shape, a checkpoint
// of a fresh workspace (everything uploaded), the first call after the
// sandbox was lost (restore included), and as the baseline the first call
// after a plain restart of a session without a workspace, in the same run.
// Peak RSS is the service process's (the sandboxes are other processes).
// The 1 GB cases run only with SESSIONBOX_BENCH_1GB=1.
func BenchmarkWorkspace(b *testing.B) {
	sizes := []struct {
		name  string
		bytes int
	}{{"10MB", 10_000_000}, {"100MB", 100_000_000}, {"1GB", 1_000_000_000}}
	for _, sz := range sizes {
		for _, files := range []int{1, 10_000} {
			b.Run(fmt.Sprintf("%s/%dfiles", sz.name, files), func(b *testing.B) {
				if sz.bytes >= 1e9 && os.Getenv("SESSIONBOX_BENCH_1GB") != "1" {
					b.Skip("set SESSIONBOX_BENCH_1GB=1 for the 1 GB cases")
				}
				benchWorkspace(b, sz.bytes, files)
			})
		}
	}
}

func benchWorkspace(b *testing.B, size, files int) {
	r := &wsRig{key: session.Key{Tenant: "acme", Principal: "alice"}}
	r.m, r.sbx = newLocalRuntimeManagerWrapped(b, session.Config{}, nil)
	ctx := b.Context()
	run := func(k session.Key, code string) time.Duration {
		start := time.Now()
		res, err := r.m.Execute(ctx, k, session.ExecRequest{Code: code, TimeoutSecs: 600}, nil)
		if err != nil || res.Error != nil {
			b.Fatalf("%s: %+v %v", code, res, err)
		}
		return time.Since(start)
	}
	kill := func(k session.Key) {
		st, err := r.m.Status(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.sbx.Kill(ctx, st.SandboxID); err != nil {
			b.Fatal(err)
		}
	}
	// Written in chunks: a 1 GB bytes object would not fit the sandbox's
	// memory limit.
	fill := fmt.Sprintf("import os\nos.makedirs('w', exist_ok=True)\nn, size = %d, %d\n"+
		"for i in range(n):\n    with open(f'w/{i:05d}.bin', 'wb') as f:\n        left = size // n\n"+
		"        while left > 0:\n            k = min(left, 16 << 20); f.write(os.urandom(k)); left -= k", files, size)
	var cp, restore, plain []time.Duration
	var cpRSS, restoreRSS float64
	for i := 0; b.Loop(); i++ {
		k := r.key
		k.SessionID = fmt.Sprintf("bench-%d", i)
		base := r.key
		base.SessionID = fmt.Sprintf("plain-%d", i)
		if _, err := r.m.Start(ctx, base, session.StartOptions{Persist: new(bool)}); err != nil {
			b.Fatal(err)
		}
		run(base, "1")
		run(k, fill)

		resetPeakRSS(b)
		start := time.Now()
		info, err := r.m.Checkpoint(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		cp = append(cp, time.Since(start))
		cpRSS = max(cpRSS, peakRSSMiB(b))
		if info.Files != files {
			b.Fatalf("checkpoint of %d files: %+v", files, info)
		}

		kill(k)
		kill(base)
		resetPeakRSS(b)
		restore = append(restore, run(k, "1"))
		restoreRSS = max(restoreRSS, peakRSSMiB(b))
		plain = append(plain, run(base, "1"))
		if err := r.m.Delete(ctx, k); err != nil {
			b.Fatal(err)
		}
		if err := r.m.Delete(ctx, base); err != nil {
			b.Fatal(err)
		}
	}
	reportLatencyAs(b, cp, "checkpoint-")
	reportLatencyAs(b, restore, "restore-first-call-")
	reportLatencyAs(b, plain, "baseline-restart-first-call-")
	b.ReportMetric(cpRSS, "checkpoint-peakRSS-MiB")
	b.ReportMetric(restoreRSS, "restore-peakRSS-MiB")
}
