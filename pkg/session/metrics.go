package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MetricsWindow is how far back a metrics answer's samples reach.
const MetricsWindow = 5 * time.Minute

// SandboxMetric is one sample of a sandbox's resource use, as the provider
// took it.
type SandboxMetric struct {
	Timestamp      time.Time `json:"timestamp"`
	CPUCount       int       `json:"cpuCount"`
	CPUUsedPct     float64   `json:"cpuUsedPct"`
	MemUsedBytes   int64     `json:"memUsedBytes"`
	MemTotalBytes  int64     `json:"memTotalBytes"`
	DiskUsedBytes  int64     `json:"diskUsedBytes"`
	DiskTotalBytes int64     `json:"diskTotalBytes"`
}

// SandboxMetrics is a sandbox's resource use now (its newest sample) and
// the samples the provider kept over the last MetricsWindow, oldest first.
type SandboxMetrics struct {
	SandboxMetric
	Samples []SandboxMetric `json:"samples"`
}

// Metrics returns the resource use of the session's sandbox. It starts and
// resumes nothing: an unknown session is ErrNotFound, and so is one without
// a sandbox (stopped, or its sandbox gone), saying so.
func (m *Manager) Metrics(ctx context.Context, key Key) (*SandboxMetrics, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	s, err := m.readSession(ctx, key)
	if err != nil {
		return nil, err
	}
	if !sandboxHeld(s) {
		return nil, noSandbox(key)
	}
	samples, err := m.sandboxes.Metrics(ctx, s.SandboxID, m.clock.Now().Add(-MetricsWindow))
	if errors.Is(err, ErrSandboxGone) {
		return nil, noSandbox(key)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics of sandbox %s: %w", s.SandboxID, err)
	}
	if len(samples) == 0 && s.State != StateRunning {
		return nil, &Error{Kind: ErrNotFound, Err: errNoSandbox,
			Detail: fmt.Sprintf("session %q's sandbox is paused and took no sample in the last %d minutes; run code to resume it", key.SessionID, int(MetricsWindow/time.Minute))}
	}
	if len(samples) == 0 {
		return nil, &Error{Kind: ErrUnavailable, RetryAfter: 5 * time.Second,
			Detail: fmt.Sprintf("the provider has no metrics of session %q's sandbox yet; try again in a few seconds", key.SessionID)}
	}
	slices.SortStableFunc(samples, func(a, b SandboxMetric) int { return a.Timestamp.Compare(b.Timestamp) })
	return &SandboxMetrics{SandboxMetric: samples[len(samples)-1], Samples: samples}, nil
}
