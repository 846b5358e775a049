//go:build linux

package e2blocal

import (
	"sync"
	"time"
)

// Metrics history, as E2B keeps it: a sample of each running sandbox every
// metricsInterval, the last metricsWindow of them answered by
// GET /sandboxes/{id}/metrics?start=&end=.
const (
	defaultMetricsInterval = 5 * time.Second
	metricsWindow          = 30 * time.Minute
	// diskSampleAge is how long a walked (not statfs'd) disk figure is
	// reused: the walk reads up to diskScanEntries entries, too much to
	// repeat every interval for every sandbox.
	diskSampleAge = 30 * time.Second
)

// metricRing is a sandbox's recent samples, oldest first, bounded.
type metricRing struct {
	mu   sync.Mutex // held while sampling too, so samples are taken one at a time
	buf  []metricBody
	next int  // where the next sample goes once the ring is full
	full bool // len(buf) reached its cap
	cap  int
}

func newMetricRing(capacity int) *metricRing {
	return &metricRing{cap: max(capacity, 1)}
}

func (r *metricRing) addLocked(m metricBody) {
	if !r.full {
		r.buf = append(r.buf, m)
		r.full = len(r.buf) == r.cap
		return
	}
	r.buf[r.next] = m
	r.next = (r.next + 1) % r.cap
}

func (r *metricRing) newestLocked() (metricBody, bool) {
	if len(r.buf) == 0 {
		return metricBody{}, false
	}
	if !r.full {
		return r.buf[len(r.buf)-1], true
	}
	return r.buf[(r.next+r.cap-1)%r.cap], true
}

// between returns the samples whose unix second lies in [start, end], oldest first.
func (r *metricRing) between(start, end int64) []metricBody {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []metricBody{}
	n := len(r.buf)
	for i := range n {
		m := r.buf[(r.next+i)%n] // next stays 0 until the ring is full
		if m.TimestampUnix >= start && m.TimestampUnix <= end {
			out = append(out, m)
		}
	}
	return out
}

// sampleIfStale records a new sample of s unless the newest is younger than
// every, and returns the newest. Callers are the sampler loop and metrics
// requests, so a burst of requests costs at most one sample per interval.
func (s *sandbox) sampleIfStale(every time.Duration) metricBody {
	r := s.metrics
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.newestLocked(); ok && time.Since(m.Timestamp) < every {
		return m
	}
	if st, _ := s.snapshot(); st != stateRunning {
		if m, ok := r.newestLocked(); ok {
			return m
		}
	}
	m := s.metric()
	r.addLocked(m)
	return m
}

// sampleMetrics samples every running sandbox each interval until the runtime closes.
func (rt *Runtime) sampleMetrics(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-rt.ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range rt.running() {
			// A little slack so a request-triggered sample just before
			// the tick does not push this one to the next tick.
			s.sampleIfStale(every - every/10)
		}
	}
}

// running lists the sandboxes that are running now.
func (rt *Runtime) running() []*sandbox {
	rt.mu.Lock()
	all := make([]*sandbox, 0, len(rt.sandboxes))
	for _, s := range rt.sandboxes {
		all = append(all, s)
	}
	rt.mu.Unlock()
	out := all[:0]
	for _, s := range all {
		if st, _ := s.snapshot(); st == stateRunning {
			out = append(out, s)
		}
	}
	return out
}
