//go:build linux

package e2blocal

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// BenchmarkSpawnOnDemand is a code-interpreter sandbox created with no warm
// pool, up to its first result: the tree is spawned on the create path and
// the first execution waits for its kernel. "serial" creates one at a time
// and says where a spawn's CPU goes (per tree, read from every task's
// schedstat before the tree is killed: bwrap, the agent, Python; "runtime"
// is this process, which also runs the client, and serially also its part
// up to the create's answer, "runtime-create"; "helpers" the commands the
// runtime waited for, mkfs.ext4). "burst10" is ten such creates at once,
// the first burst a runtime sees before its pool has grown; "burst10/pool=N"
// the same with N trees waiting in the pool (WarmPool = WarmPoolMax = N),
// the trade of idle memory for a first burst.
func BenchmarkSpawnOnDemand(b *testing.B) {
	b.Run("serial", func(b *testing.B) { benchSpawn(b, 1, 0) })
	b.Run("burst10", func(b *testing.B) { benchSpawn(b, 10, 0) })
	for _, n := range []int{2, 5, 10} {
		b.Run(fmt.Sprintf("burst10/pool=%d", n), func(b *testing.B) { benchSpawn(b, 10, n) })
	}
}

func benchSpawn(b *testing.B, burst, pool int) {
	cfg := Config{WarmPool: -1}
	if pool > 0 {
		cfg = Config{WarmPool: pool, WarmPoolMax: pool}
	}
	rt := startRuntime(b, cfg)
	waitPool := func() {
		deadline := time.Now().Add(time.Minute)
		for pool > 0 && len(rt.pool) < pool {
			if time.Now().After(deadline) {
				b.Fatalf("pool holds %d trees after a minute, want %d", len(rt.pool), pool)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	body := map[string]any{"templateID": "code-interpreter-v1"}
	var lat []time.Duration
	cpu := map[string]time.Duration{}
	trees := 0
	var runtimeCPU, helperCPU, createCPU time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		waitPool()
		time.Sleep(300 * time.Millisecond) // teardowns and pooled kernels settle
		self0, kids0 := rusage(unix.RUSAGE_SELF), rusage(unix.RUSAGE_CHILDREN)
		b.StartTimer()
		var mu sync.Mutex
		var wg sync.WaitGroup
		ids := make([]string, burst)
		for i := range burst {
			wg.Go(func() {
				start := time.Now()
				self0 := rusage(unix.RUSAGE_SELF)
				sb := createSandbox(b, rt, body)
				if burst == 1 {
					createCPU += rusage(unix.RUSAGE_SELF) - self0
				}
				if out := execute(b, rt, sb, "1+1"); !strings.Contains(out, `"2"`) {
					b.Errorf("execute: %s", out)
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				ids[i] = sb.SandboxID
			})
		}
		wg.Wait()
		b.StopTimer()
		runtimeCPU += rusage(unix.RUSAGE_SELF) - self0
		helperCPU += rusage(unix.RUSAGE_CHILDREN) - kids0
		for _, id := range ids {
			for group, d := range treeCPU(rt.lookup(id).proc.Cmd.Process.Pid) {
				cpu[group] += d
			}
			trees++
		}
		killAll(b, rt, ids)
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	if pool > 0 {
		return // pooled trees spent their CPU before the rounds
	}
	perTree := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(trees) }
	total := runtimeCPU + helperCPU
	for group, d := range cpu {
		b.ReportMetric(perTree(d), group+"-cpu-ms/tree")
		total += d
	}
	b.ReportMetric(perTree(runtimeCPU), "runtime-cpu-ms/tree")
	if burst == 1 {
		// Serial creates alone in the process: the runtime's share up to the
		// create's answer, the rest is the first execution's.
		b.ReportMetric(perTree(createCPU), "runtime-create-cpu-ms/tree")
	}
	b.ReportMetric(perTree(helperCPU), "helpers-cpu-ms/tree")
	b.ReportMetric(perTree(total), "cpu-ms/tree")
}

// treeCPU sums the CPU time every task below pid has used so far, by
// process kind.
func treeCPU(pid int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range jail.ProcessTree(pid) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil {
			continue
		}
		group := "other"
		switch name := strings.TrimSpace(string(comm)); {
		case name == "bwrap":
			group = "bwrap"
		case name == "agent":
			group = "agent"
		case strings.HasPrefix(name, "python"):
			group = "python"
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p))
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			if f := strings.Fields(string(data)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				out[group] += time.Duration(ns)
			}
		}
	}
	return out
}

// rusage is the user and system CPU time getrusage reports for who.
func rusage(who int) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
