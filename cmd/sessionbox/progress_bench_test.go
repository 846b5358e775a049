package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/schollz/progressbar/v3"
)

// BenchmarkDownloadProgress: what the progress bar costs a download of
// 64 MiB from a local server, beside the same download without one in the
// same run. It reports the median and p99 time per download.
func BenchmarkDownloadProgress(b *testing.B) {
	const size = 64 << 20
	data := make([]byte, size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	for _, tc := range []struct {
		name string
		bar  func() *progressbar.ProgressBar
	}{
		{"plain", func() *progressbar.ProgressBar { return nil }},
		// The bar the CLI draws; stderr is /dev/null meanwhile.
		{"bar", func() *progressbar.ProgressBar { return progressbar.DefaultBytes(size, "get") }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			was := os.Stderr
			os.Stderr = devnull
			defer func() { os.Stderr = was }()
			b.SetBytes(size)
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				resp, err := http.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				bar := tc.bar()
				if _, err := io.Copy(countWriter(io.Discard, bar), resp.Body); err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
				finish(bar, nil)
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[(len(times)*99)/100].Microseconds()), "p99-µs")
		})
	}
}
