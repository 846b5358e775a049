//go:build linux

package e2blocal

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// BenchmarkCreateToFirstCommand measures what a user waits for: create a
// sandbox through the API, then run `true` in it through envd via the
// routing address. "burst" creates back to back, so the warm pool is mostly
// empty and trees are spawned on the create path; "paced" leaves the pool
// time to refill between creates (untimed), as with interactive use.
// "internet" is paced with allowInternetAccess: no warm pool, plus
// slirp4netns coming up. Sandboxes are killed outside the timed section.
func BenchmarkCreateToFirstCommand(b *testing.B) {
	offline := map[string]any{"templateID": "base"}
	online := map[string]any{"templateID": "base", "allow_internet_access": true}
	for _, bc := range []struct {
		name   string
		gap    time.Duration
		body   map[string]any
		diskMB int
	}{
		{"burst", 0, offline, 0}, {"paced", 100 * time.Millisecond, offline, 0},
		{"internet", 100 * time.Millisecond, online, 0},
		// Plain home directories, as before homes were images: the cost of
		// the quota is the difference from the cases above.
		{"burst-plainhome", 0, offline, -1}, {"paced-plainhome", 100 * time.Millisecond, offline, -1},
	} {
		b.Run(bc.name, func(b *testing.B) { benchCreate(b, bc.gap, bc.body, Config{DiskMB: bc.diskMB}) })
	}
}

func benchCreate(b *testing.B, gap time.Duration, body map[string]any, cfg Config) {
	rt := startRuntime(b, cfg)
	if body["allow_internet_access"] == true && rt.noNet != nil {
		b.Logf("no internet access here: %v", rt.noNet)
		return
	}
	ctx := context.Background()
	var lat []time.Duration
	var ids []string
	time.Sleep(gap)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		sb := createSandbox(b, rt, body)
		if r := runIn(ctx, rt, sb, "true"); r.err != nil || r.exit != 0 {
			b.Fatalf("first command: %+v", r)
		}
		lat = append(lat, time.Since(start))
		ids = append(ids, sb.SandboxID)
		b.StopTimer()
		if len(ids) >= 20 {
			killAll(b, rt, ids)
			ids = ids[:0]
		}
		time.Sleep(gap)
		b.StartTimer()
	}
	b.StopTimer()
	killAll(b, rt, ids)
	reportPercentiles(b, lat)
}

// BenchmarkFirstExecute measures a session's first cell, `1+1`, right after
// its sandbox was created ("now") or after 100 ms of think time ("think"):
// in a base sandbox the kernel starts on that first use, in a
// code-interpreter one it was started with the sandbox (Prewarm). Only the
// execute is timed.
func BenchmarkFirstExecute(b *testing.B) {
	for _, bc := range []struct {
		name     string
		template string
		gap      time.Duration
	}{
		{"base/now", "base", 0}, {"base/think", "base", 100 * time.Millisecond},
		{"prewarmed/now", "code-interpreter-v1", 0}, {"prewarmed/think", "code-interpreter-v1", 100 * time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt := startRuntime(b, Config{})
			var lat []time.Duration
			for range b.N {
				b.StopTimer()
				sb := createSandbox(b, rt, map[string]any{"templateID": bc.template})
				time.Sleep(bc.gap)
				b.StartTimer()
				start := time.Now()
				if out := execute(b, rt, sb, "1+1"); !strings.Contains(out, `"2"`) {
					b.Fatalf("execute: %s", out)
				}
				lat = append(lat, time.Since(start))
				b.StopTimer()
				killAll(b, rt, []string{sb.SandboxID})
				time.Sleep(50 * time.Millisecond) // the pool refills
				b.StartTimer()
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

func killAll(b testing.TB, rt *Runtime, ids []string) {
	for _, id := range ids {
		if r := api(b, rt, "DELETE", "/sandboxes/"+id, nil); r.status != http.StatusNoContent {
			b.Fatalf("kill %s: %d", id, r.status)
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkIdleSandboxMemory reports the memory of idle sandboxes: resident
// set (RSS) and proportional set (PSS, shared pages split between sharers)
// of each process tree (bwrap, its init, the agent, and in a
// code-interpreter sandbox its prewarmed kernel), averaged.
func BenchmarkIdleSandboxMemory(b *testing.B) {
	for _, template := range []string{"base", "code-interpreter-v1"} {
		b.Run(template, func(b *testing.B) { benchIdleMemory(b, template) })
	}
}

func benchIdleMemory(b *testing.B, template string) {
	rt := startRuntime(b, Config{})
	const n = 10
	var ids []string
	for range n {
		sb := createSandbox(b, rt, map[string]any{"templateID": template})
		mustRun(b, rt, sb, "true") // envd has served a command, as after real use
		ids = append(ids, sb.SandboxID)
	}
	time.Sleep(500 * time.Millisecond)
	b.ResetTimer()
	var rss, pss int64
	for range b.N {
		rss, pss = 0, 0
		for _, id := range ids {
			for _, pid := range jail.ProcessTree(rt.lookup(id).proc.Cmd.Process.Pid) {
				r, p := memOf(pid)
				rss += r
				pss += p
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rss)/n/(1<<20), "rss-MB/sandbox")
	b.ReportMetric(float64(pss)/n/(1<<20), "pss-MB/sandbox")
	killAll(b, rt, ids)
}

// memOf returns a process's RSS and PSS in bytes from smaps_rollup.
func memOf(pid int) (rss, pss int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			rss = v << 10
		case "Pss:":
			pss = v << 10
		}
	}
	return rss, pss
}

// createMany creates n sandboxes with a few creates in flight at once.
func createMany(t testing.TB, rt *Runtime, n int) []sandboxBody {
	t.Helper()
	out := make([]sandboxBody, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := do(t, "POST", rt.APIURL()+"/v2/sandboxes", map[string]any{"templateID": "base"}, map[string]string{"X-API-Key": testKey})
			if r.status != http.StatusCreated {
				errs <- fmt.Errorf("create %d: %d %s", i, r.status, r.body)
				return
			}
			r.decode(t, &out[i])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// BenchmarkInterpreterRoundTrip runs `1+1` in a code-interpreter sandbox:
// "routed" goes through the runtime's sandbox address as the SDKs do,
// "direct" talks to the agent's socket, so the difference is the proxy's
// cost.
func BenchmarkInterpreterRoundTrip(b *testing.B) {
	rt := startRuntime(b, Config{})
	sb := createSandbox(b, rt, map[string]any{"templateID": "code-interpreter-v1"})
	s := rt.lookup(sb.SandboxID)
	for _, bc := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"routed", &http.Client{}, rt.SandboxURL()},
		{"direct", &http.Client{Transport: s.transport}, "http://sandbox"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			execute := func() {
				req, _ := http.NewRequest("POST", bc.url+"/execute", strings.NewReader(`{"code":"1+1"}`))
				req.Header.Set(hdrSandboxID, sb.SandboxID)
				req.Header.Set(hdrSandboxPort, "49999")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
				resp, err := bc.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !strings.Contains(string(body), `"2"`) {
					b.Fatalf("execute: %v %s", err, body)
				}
			}
			for range 5 {
				execute() // start the kernel, warm connections
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				execute()
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkSeccomp measures what the sandboxes' seccomp filter costs, with
// the filter ("on") and without it ("off", Config.NoSeccomp) in one run:
// "start" is a paced create until a first command has run, "execute" a
// `1+1` cell round trip on a started kernel.
func BenchmarkSeccomp(b *testing.B) {
	for _, mode := range []struct {
		name string
		off  bool
	}{{"on", false}, {"off", true}} {
		b.Run("start-"+mode.name, func(b *testing.B) {
			benchCreate(b, 100*time.Millisecond, map[string]any{"templateID": "base"}, Config{NoSeccomp: mode.off})
		})
		b.Run("execute-"+mode.name, func(b *testing.B) {
			rt := startRuntime(b, Config{NoSeccomp: mode.off, WarmPool: -1})
			sb := createSandbox(b, rt, map[string]any{"templateID": "code-interpreter-v1"})
			execute(b, rt, sb, "1+1")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if out := execute(b, rt, sb, "1+1"); !strings.Contains(out, `"2"`) {
					b.Fatalf("execute: %s", out)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkIdlePoolMemory is the memory of the warm pool at rest: n trees
// waiting with their standby kernels (every process the runtime spawned;
// no sandbox is created), per tree. It is the price of the pool grown by a
// burst of n creates, for WarmPoolWindow.
func BenchmarkIdlePoolMemory(b *testing.B) {
	const n = 10
	rt := startRuntime(b, Config{WarmPool: n, WarmPoolMax: n})
	deadline := time.Now().Add(60 * time.Second)
	for len(rt.pool) < n {
		if time.Now().After(deadline) {
			b.Fatalf("pool holds %d trees after a minute, want %d", len(rt.pool), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	b.ResetTimer()
	var rss, pss int64
	for range b.N {
		rss, pss = 0, 0
		for _, pid := range jail.ProcessTree(os.Getpid()) {
			if pid == os.Getpid() {
				continue
			}
			r, p := memOf(pid)
			rss += r
			pss += p
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rss)/n/(1<<20), "rss-MB/tree")
	b.ReportMetric(float64(pss)/n/(1<<20), "pss-MB/tree")
}
