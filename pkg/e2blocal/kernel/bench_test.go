//go:build linux

package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// reportLatency adds p50/p99 of the per-iteration durations to the benchmark output.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// timeEach runs run b.N times, timing each call, and reports the latencies.
func timeEach(b *testing.B, run func()) {
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		run()
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, durs)
}

// benchServer serves a kernel server for cfg over HTTP on 127.0.0.1 until
// the benchmark ends and returns its URL.
func benchServer(b *testing.B, cfg Config, tune tuning) string {
	s, err := newServer(cfg, tune)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s)
	b.Cleanup(func() {
		ts.Close()
		_ = s.Close()
	})
	return ts.URL
}

// BenchmarkExecuteRoundTrip measures `1+1` through the handler over real HTTP on 127.0.0.1.
func BenchmarkExecuteRoundTrip(b *testing.B) {
	benchExecute(b, "1+1", `"text":"2"`)
}

// BenchmarkExecuteOutputRoundTrip is BenchmarkExecuteRoundTrip for a cell
// that prints.
func BenchmarkExecuteOutputRoundTrip(b *testing.B) {
	benchExecute(b, "print(1)", `"text":"1\n"`)
}

func benchExecute(b *testing.B, code, want string) {
	url := benchServer(b, Config{Python: testPython, Workdir: b.TempDir()}, defaultTuning)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body, _ := json.Marshal(map[string]string{"code": code})
	run := func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/execute", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Contains(out, []byte(want)) {
			b.Fatalf("bad response %q: %v", out, err)
		}
	}
	run() // start the kernel outside the measurement
	b.ReportAllocs()
	timeEach(b, run)
}

// BenchmarkSpawnPythonBaseline is the naive alternative: one interpreter per execution.
func BenchmarkSpawnPythonBaseline(b *testing.B) {
	b.ReportAllocs()
	timeEach(b, func() {
		out, err := exec.Command(testPython, "-c", "print(1+1)").Output()
		if err != nil || strings.TrimSpace(string(out)) != "2" {
			b.Fatalf("python: %q %v", out, err)
		}
	})
}

// BenchmarkKernelStart measures starting a kernel until it reports ready (first use of a context).
func BenchmarkKernelStart(b *testing.B) {
	pyc, err := Compile(testPython, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, compiled string }{{"source", ""}, {"compiled", pyc}} {
		b.Run(bc.name, func(b *testing.B) { benchKernelStart(b, bc.compiled) })
	}
}

func benchKernelStart(b *testing.B, compiled string) {
	spec := procSpec{python: testPython, compiled: compiled, dir: b.TempDir(), env: []string{"PATH=/usr/bin:/bin"},
		cap: DefaultMaxOutputBytes, maxFrame: defaultMaxFrame}
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p, err := startProc(context.Background(), spec, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
		p.kill()
		<-p.done
	}
	b.StopTimer()
	reportLatency(b, durs)
}

// BenchmarkCellFeatures measures what dedent and chart extraction cost:
// `1+1` plain and indented, and a figure cell, each with chart extraction on
// and off (SESSIONBOX_CHARTS=0), on two warm kernels, the two measured one
// after the other for each cell.
func BenchmarkCellFeatures(b *testing.B) {
	cells := []struct{ name, code, want string }{
		{"1+1", `1+1`, `"text":"2"`},
		{"indented-1+1", "\n    x = 1\n    x + 1\n", `"text":"2"`},
		{"figure", `plt.plot(range(100)); plt.title("t"); plt.show()`, `"png":`},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	urls := map[string]string{}
	for _, charts := range []string{"1", "0"} {
		urls[charts] = benchServer(b, Config{Python: testPython, Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "SESSIONBOX_CHARTS=" + charts}}, defaultTuning)
	}
	run := func(b *testing.B, charts, code, want string) {
		body, _ := json.Marshal(map[string]string{"code": code})
		resp, err := client.Post(urls[charts]+"/execute", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Contains(out, []byte(want)) {
			b.Fatalf("bad response %q: %v", out, err)
		}
		if hasChart := bytes.Contains(out, []byte(`"chart":`)); hasChart != (charts == "1" && want == `"png":`) {
			b.Fatalf("charts=%s but chart present=%v: %.200q", charts, hasChart, out)
		}
	}
	for _, charts := range []string{"1", "0"} {
		run(b, charts, "import matplotlib.pyplot as plt", "end_of_execution")
		for _, c := range cells {
			run(b, charts, c.code, c.want) // first use: imports, font cache
		}
	}
	for _, c := range cells {
		for _, charts := range []string{"1", "0"} {
			b.Run(c.name+"/charts="+charts, func(b *testing.B) {
				timeEach(b, func() { run(b, charts, c.code, c.want) })
			})
		}
	}
}

// BenchmarkChangedFiles measures `1+1` in a working directory holding 50
// files (40 at the top, 10 in a subdirectory), the kernel scanning it
// around each cell ("scan") against the server watching it ("watch"), one
// warm kernel each.
func BenchmarkChangedFiles(b *testing.B) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, mode := range []struct {
		name     string
		scanOnly bool
	}{{"scan", true}, {"watch", false}} {
		dir := b.TempDir()
		for i := range 50 {
			name := filepath.Join(dir, fmt.Sprintf("f%d.csv", i))
			if i >= 40 {
				name = filepath.Join(dir, "data", fmt.Sprintf("f%d.csv", i))
			}
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(name, []byte("a,b\n1,2\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		tune := defaultTuning
		tune.scanOnly = mode.scanOnly
		url := benchServer(b, Config{Python: testPython, Workdir: dir}, tune)
		b.Run(mode.name, func(b *testing.B) {
			run := func() {
				resp, err := client.Post(url+"/execute", "application/json", strings.NewReader(`{"code": "1+1"}`))
				if err != nil {
					b.Fatal(err)
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Contains(out, []byte(`"files_changed"`)) {
					b.Fatalf("bad response %q: %v", out, err)
				}
			}
			run()
			timeEach(b, run)
		})
	}
}

// BenchmarkLanguages sets the cost of a javascript and a typescript context
// beside python's, in one run: "start" is a kernel's start until it reports
// ready (a context's first use; python compiled, as the runtime runs it),
// "execute" a `1+1` round trip over HTTP on a warm kernel.
func BenchmarkLanguages(b *testing.B) {
	if _, err := os.Stat(testNode); err != nil {
		b.Skip("no node at " + testNode)
	}
	pyc, err := Compile(testPython, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	langs := []string{langPython, langJavaScript, langTypeScript}
	cfg := Config{Python: testPython, Compiled: pyc, Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	s, err := newServer(cfg, defaultTuning)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for _, lang := range langs {
		b.Run("start/"+lang, func(b *testing.B) {
			spec := s.procSpec(lang, cfg.Workdir, false)
			durs := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				p, err := startProc(context.Background(), spec, 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
				p.kill()
				<-p.done
			}
			b.StopTimer()
			reportLatency(b, durs)
		})
	}
	url := benchServer(b, cfg, defaultTuning)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, lang := range langs {
		b.Run("execute/"+lang, func(b *testing.B) {
			body, _ := json.Marshal(map[string]string{"code": "1+1", "language": lang})
			run := func() {
				resp, err := client.Post(url+"/execute", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Contains(out, []byte(`"text":"2"`)) {
					b.Fatalf("bad response %q: %v", out, err)
				}
			}
			run() // the kernel starts outside the measurement
			timeEach(b, run)
		})
	}
}
