package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

type metricView struct {
	Timestamp      time.Time `json:"timestamp"`
	CPUCount       int       `json:"cpuCount"`
	CPUUsedPct     float64   `json:"cpuUsedPct"`
	MemUsedBytes   int64     `json:"memUsedBytes"`
	MemTotalBytes  int64     `json:"memTotalBytes"`
	DiskUsedBytes  int64     `json:"diskUsedBytes"`
	DiskTotalBytes int64     `json:"diskTotalBytes"`
}

type metricsView struct {
	metricView
	Samples []metricView `json:"samples"`
}

// burnCode holds 128 MiB, writes 8 MiB to the home and keeps one CPU busy
// in a thread until `burning = False` or 60 s have passed.
const burnCode = `import threading, time
held = bytearray(128 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
with open('ballast.bin', 'wb') as f:
    f.write(b'x' * (8 << 20))
burning = True
def burn():
    end = time.time() + 60
    while burning and time.time() < end:
        pass
threading.Thread(target=burn, daemon=True).start()`

// TestEndToEndSandboxMetrics: after the sandbox burns CPU and allocates
// memory, the metrics route shows CPU use above zero and memory and disk
// use within their totals; a session without a sandbox is 404.
func TestEndToEndSandboxMetrics(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const sid = "metrics"
	base := "/v1/sessions/" + sid
	if r := s.exec(s.alice, sid, burnCode); !r.Success {
		t.Fatalf("burn: %+v", r)
	}
	// Samples come every 5 s; wait for one taken while the thread burned.
	var m metricsView
	testwait.Until(t, 45*time.Second, func() error {
		s.json(s.alice, "GET", base+"/sandbox/metrics", nil, &m)
		if m.CPUUsedPct <= 0 || m.MemUsedBytes < 128<<20 {
			return fmt.Errorf("no sample showed the burn: %+v", m)
		}
		return nil
	})
	s.exec(s.alice, sid, "burning = False")
	t.Logf("during the burn: %+v (%d samples)", m.metricView, len(m.Samples))
	checkMetric(t, "now", m.metricView)
	if m.MemUsedBytes < 128<<20 || m.DiskUsedBytes < 8<<20 {
		t.Fatalf("memory %d and disk %d do not hold what the code put there", m.MemUsedBytes, m.DiskUsedBytes)
	}
	if len(m.Samples) == 0 || m.Samples[len(m.Samples)-1] != m.metricView {
		t.Fatalf("the newest of %d samples is not the top-level one", len(m.Samples))
	}
	if !slices.IsSortedFunc(m.Samples, func(a, b metricView) int { return a.Timestamp.Compare(b.Timestamp) }) {
		t.Fatalf("samples are not oldest first: %+v", m.Samples)
	}
	for i, sm := range m.Samples {
		checkMetric(t, fmt.Sprintf("sample %d", i), sm)
	}

	s.json(s.alice, "POST", base+"/sandbox/stop", nil, nil)
	resp, b := s.req(s.alice, "GET", base+"/sandbox/metrics", nil)
	if d := s.problem(http.StatusNotFound, resp, b)["detail"].(string); !strings.Contains(d, `session "metrics" has no sandbox`) {
		t.Fatalf("metrics of a stopped session: %q", d)
	}
	if got := s.sessionSandboxes("alice", sid); len(got) != 0 {
		t.Fatalf("metrics started sandboxes %v", got)
	}
}

// checkMetric holds one sample's figures within their ranges.
func checkMetric(t *testing.T, what string, m metricView) {
	t.Helper()
	switch {
	case m.Timestamp.IsZero() || m.CPUCount < 1:
		t.Fatalf("%s: no time or CPU count: %+v", what, m)
	case m.CPUUsedPct < 0 || m.CPUUsedPct > 100:
		t.Fatalf("%s: cpuUsedPct %v outside 0..100", what, m.CPUUsedPct)
	case m.MemTotalBytes <= 0 || m.MemUsedBytes < 0 || m.MemUsedBytes > m.MemTotalBytes:
		t.Fatalf("%s: memory %d of %d", what, m.MemUsedBytes, m.MemTotalBytes)
	case m.DiskTotalBytes <= 0 || m.DiskUsedBytes < 0 || m.DiskUsedBytes > m.DiskTotalBytes:
		t.Fatalf("%s: disk %d of %d", what, m.DiskUsedBytes, m.DiskTotalBytes)
	}
}
