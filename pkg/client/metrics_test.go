package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestMetrics reads the sandbox metrics route's answer, and its 404.
func TestMetrics(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/sessions/s1/sandbox/metrics":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":256,"memTotalBytes":1024,"diskUsedBytes":1,"diskTotalBytes":10,`+
				`"samples":[{"timestamp":"2026-01-02T03:04:00Z","cpuCount":2,"cpuUsedPct":12,"memUsedBytes":128,"memTotalBytes":1024,"diskUsedBytes":1,"diskTotalBytes":10},`+
				`{"timestamp":"2026-01-02T03:04:05Z","cpuCount":2,"cpuUsedPct":37.5,"memUsedBytes":256,"memTotalBytes":1024,"diskUsedBytes":1,"diskTotalBytes":10}]}`)
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"type":"https://sessionbox.dev/problems/not-found","title":"Not found","status":404,"detail":"session \"s2\" has no sandbox"}`)
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL, "sbx_test_0123456789", nil)
	m, err := c.Metrics(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUUsedPct != 37.5 || m.MemUsedBytes != 256 || m.CPUCount != 2 || !m.Timestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) ||
		len(m.Samples) != 2 || m.Samples[0].CPUUsedPct != 12 {
		t.Fatalf("metrics = %+v", m)
	}
	_, err = c.Metrics(context.Background(), "s2")
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != 404 || p.Detail != `session "s2" has no sandbox` {
		t.Fatalf("metrics of a session without a sandbox: %v", err)
	}
}
