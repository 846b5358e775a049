package e2e

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// timedCall sends one request and returns how long its whole answer took.
func (s *stack) timedCall(b *testing.B, method, path, body string) time.Duration {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	start := time.Now()
	req, _ := http.NewRequest(method, s.url+path, r)
	req.Header.Set("Authorization", "Bearer "+s.alice)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s %s: status %d", method, path, resp.StatusCode)
	}
	return time.Since(start)
}

// reportPair reports p50 and p99 of a case and its baseline, measured
// interleaved in one run, and the ratio of their medians.
func reportPair(b *testing.B, name string, got, baseline []time.Duration) {
	q := func(s []time.Duration, p float64) float64 {
		s = slices.Clone(s)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
	}
	if len(got) == 0 || len(baseline) == 0 {
		return
	}
	b.ReportMetric(q(got, 0.5), name+"-p50-ms")
	b.ReportMetric(q(got, 0.99), name+"-p99-ms")
	b.ReportMetric(q(baseline, 0.5), "baseline-p50-ms")
	b.ReportMetric(q(baseline, 0.99), "baseline-p99-ms")
	b.ReportMetric(q(got, 0.5)/q(baseline, 0.5), name+"/baseline-p50")
}

// BenchmarkExecuteInContext puts an execute in a context (the session's
// record read once more, to refuse unknown or gone contexts before any
// sandbox is touched) beside an execute in the default context, alternated
// on one warm sandbox.
func BenchmarkExecuteInContext(b *testing.B) {
	s := newStack(b)
	const sid = "bench-ctx"
	s.exec(s.alice, sid, "x = 1")
	c := s.createContext(sid, nil)
	s.execIn(sid, c.ContextID, "y = 1")
	path := "/v1/sessions/" + sid + "/execute"
	var inCtx, def []time.Duration
	for b.Loop() {
		def = append(def, s.timedCall(b, "POST", path, `{"code":"x + 1"}`))
		inCtx = append(inCtx, s.timedCall(b, "POST", path, `{"code":"y + 1","context":"`+c.ContextID+`"}`))
	}
	b.StopTimer()
	reportPair(b, "context", inCtx, def)
}

// BenchmarkSandboxMetrics puts the metrics route (a record read and a
// control-plane call) beside the session's status (a record read),
// alternated.
func BenchmarkSandboxMetrics(b *testing.B) {
	s := newStack(b)
	const sid = "bench-metrics"
	s.exec(s.alice, sid, "1")
	base := "/v1/sessions/" + sid + "/sandbox"
	var metrics, status []time.Duration
	for b.Loop() {
		status = append(status, s.timedCall(b, "GET", base, ""))
		metrics = append(metrics, s.timedCall(b, "GET", base+"/metrics", ""))
	}
	b.StopTimer()
	reportPair(b, "metrics", metrics, status)
}
