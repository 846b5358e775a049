package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// reportLatency adds p50 and p99 of the samples to the benchmark's output.
func reportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkExecuteRoundTrip is one execute through the whole local stack:
// HTTP, auth against the store, the Manager, the E2B client, the sandbox's
// kernel, and back; the sandbox is warm, as in a chat session.
func BenchmarkExecuteRoundTrip(b *testing.B) {
	s := newStack(b)
	s.exec(s.alice, "bench", "x = 1")
	samples := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		req, _ := http.NewRequest("POST", s.url+"/v1/sessions/bench/execute", strings.NewReader(`{"code":"x + 1"}`))
		req.Header.Set("Authorization", "Bearer "+s.alice)
		resp, err := s.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, samples)
}

// BenchmarkSpawnIsolatedInterpreter is the alternative the service is
// measured against: a fresh bubblewrap-isolated Python per execution.
func BenchmarkSpawnIsolatedInterpreter(b *testing.B) {
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--new-session",
			"/usr/bin/python3", "-c", "x = 1\nprint(x + 1)").Output()
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != "2" {
			b.Fatalf("isolated python: %q %v", out, err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, samples)
}

// BenchmarkTransfer24MiB is a 24 MiB file's trip through the API's large
// file path: presign, upload straight to S3, import into the sandbox.
func BenchmarkTransfer24MiB(b *testing.B) {
	s := newStack(b)
	s.exec(s.alice, "bench-transfer", "1")
	data := bytes.Repeat([]byte("0123456789abcdef"), (24<<20)/16)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var up struct {
			UploadURL  string            `json:"uploadUrl"`
			Method     string            `json:"method"`
			Headers    map[string]string `json:"headers"`
			TransferID string            `json:"transferId"`
		}
		s.json(s.alice, "POST", "/v1/sessions/bench-transfer/files/upload-url", map[string]any{"path": "big.bin", "sizeBytes": len(data)}, &up)
		req, _ := http.NewRequest(up.Method, up.UploadURL, bytes.NewReader(data))
		for k, v := range up.Headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("upload: %d", resp.StatusCode)
		}
		s.json(s.alice, "POST", "/v1/sessions/bench-transfer/files/import", map[string]any{"transferId": up.TransferID}, nil)
	}
}
