package session

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Metrics of a fake sandbox: samples by sandbox id, as a provider keeps
// them (in no particular order).
func (f *fakeSandboxes) Metrics(ctx context.Context, id string, since time.Time) ([]SandboxMetric, error) {
	if err := f.enter(ctx, "Metrics", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return nil, err
	}
	var out []SandboxMetric
	for _, m := range f.samples[id] {
		if !m.Timestamp.Before(since) {
			out = append(out, m)
		}
	}
	return out, nil
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := t.Context()
	s := r.mustStart(t, ctx, testKey, StartOptions{})
	now := r.clock.Now()
	sample := func(ago time.Duration, pct float64) SandboxMetric {
		return SandboxMetric{Timestamp: now.Add(-ago), CPUCount: 2, CPUUsedPct: pct, MemUsedBytes: 100, MemTotalBytes: 1000, DiskUsedBytes: 10, DiskTotalBytes: 100}
	}
	r.sbx.mu.Lock()
	r.sbx.samples = map[string][]SandboxMetric{s.SandboxID: {sample(10*time.Second, 50), sample(time.Hour, 1), sample(0, 75), sample(5*time.Second, 25)}}
	r.sbx.mu.Unlock()
	got, err := r.m.Metrics(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.CPUUsedPct != 75 || !got.Timestamp.Equal(now) || got.CPUCount != 2 || got.MemTotalBytes != 1000 {
		t.Fatalf("now = %+v, want the newest sample", got.SandboxMetric)
	}
	var pcts []float64
	for _, m := range got.Samples {
		pcts = append(pcts, m.CPUUsedPct)
	}
	if fmt.Sprint(pcts) != "[50 25 75]" {
		t.Fatalf("samples %v, want the window's, oldest first", pcts)
	}
}

func TestMetricsWithoutSandbox(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		setup  func(r *rig)
		detail string
		kind   error
	}{
		{"unknown session", func(*rig) {}, `session "chat-1" not found`, ErrNotFound},
		{"stopped", func(r *rig) {
			r.mustStart(t, context.Background(), testKey, StartOptions{})
			if _, err := r.m.Stop(context.Background(), testKey); err != nil {
				t.Error(err)
			}
		}, `session "chat-1" has no sandbox`, ErrNotFound},
		{"sandbox gone", func(r *rig) {
			s := r.mustStart(t, context.Background(), testKey, StartOptions{})
			r.sbx.vanish(s.SandboxID)
		}, `session "chat-1" has no sandbox`, ErrNotFound},
		{"no samples yet", func(r *rig) { r.mustStart(t, context.Background(), testKey, StartOptions{}) },
			"no metrics of session \"chat-1\"'s sandbox yet", ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			tc.setup(r)
			creates := r.sbx.count("Create")
			_, err := r.m.Metrics(t.Context(), testKey)
			wantKind(t, "metrics", err, tc.kind, tc.detail)
			if r.sbx.count("Create") != creates || r.sbx.count("Connect") != 0 {
				t.Fatalf("metrics started or resumed a sandbox")
			}
		})
	}
}
