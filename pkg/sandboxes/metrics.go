package sandboxes

import (
	"context"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// Metrics returns the samples the control plane kept of the sandbox since
// a time.
func (a *E2B) Metrics(ctx context.Context, id string, since time.Time) ([]session.SandboxMetric, error) {
	ms, err := a.client.Metrics(ctx, id, e2b.MetricsParams{Start: since})
	if err != nil {
		return nil, domainError("sandbox metrics", err)
	}
	out := make([]session.SandboxMetric, len(ms))
	for i, m := range ms {
		at := m.Timestamp
		if at.IsZero() && m.TimestampUnix > 0 {
			at = time.Unix(m.TimestampUnix, 0)
		}
		out[i] = session.SandboxMetric{Timestamp: at.UTC(), CPUCount: m.CPUCount, CPUUsedPct: m.CPUUsedPct,
			MemUsedBytes: m.MemUsed, MemTotalBytes: m.MemTotal, DiskUsedBytes: m.DiskUsed, DiskTotalBytes: m.DiskTotal}
	}
	return out, nil
}
