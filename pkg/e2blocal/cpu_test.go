//go:build linux

package e2blocal

import (
	"testing"
	"time"
)

func TestCPUPercent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := func(after time.Duration, used time.Duration, cgroup bool) cpuSample {
		return cpuSample{at: at.Add(after), used: used, cgroup: cgroup}
	}
	cases := []struct {
		name      string
		prev, cur cpuSample
		count     int
		want      float64
	}{
		{"one busy CPU of two", sample(0, time.Second, true), sample(10*time.Second, 11*time.Second, true), 2, 50},
		{"idle", sample(0, time.Second, false), sample(5*time.Second, time.Second, false), 1, 0},
		{"first sample", cpuSample{}, sample(5*time.Second, 3*time.Second, true), 1, 0},
		{"source changed", sample(0, time.Second, false), sample(5*time.Second, 4*time.Second, true), 1, 0},
		{"a process exited and took its times", sample(0, 9*time.Second, false), sample(5*time.Second, 2*time.Second, false), 1, 0},
		{"clock rounding past all CPUs", sample(0, 0, false), sample(time.Second, 1100*time.Millisecond, false), 1, 100},
		{"no time passed", sample(0, 0, true), sample(0, time.Second, true), 1, 0},
	}
	for _, tc := range cases {
		if got := cpuPercent(tc.prev, tc.cur, tc.count); got != tc.want {
			t.Errorf("%s: %v%%, want %v%%", tc.name, got, tc.want)
		}
	}
}
