package api

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkMCPOverhead compares a tools/call of execute_python over
// /v1/mcp (a server built per request, JSON-RPC, an event stream) with the
// same execution through POST .../execute, both on the fake Manager, and
// reports each one's median and p99.
func BenchmarkMCPOverhead(b *testing.B) {
	for _, c := range []struct {
		name, path, body, accept string
	}{
		{"rest-execute", "/v1/sessions/s1/execute", `{"code":"print('hi')\n1+1"}`, "application/json"},
		{"mcp-tools-call", "/v1/mcp?session=s1",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"print('hi')\n1+1"}}}`,
			"application/json, text/event-stream"},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b)
			client := h.srv.Client()
			var lat []time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				req, _ := http.NewRequest("POST", h.srv.URL+c.path, strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer "+keyAlice)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", c.accept)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
