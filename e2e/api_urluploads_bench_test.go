package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// BenchmarkUploadURLs measures uploads from URLs against the write paths a
// client would otherwise use for the same bytes: 200 files of 1 MiB (against
// 200 inline PUTs, 8 at a time, as the fetches go) and one of 1 GiB (against
// a presigned upload to the S3 stand-in and an import). Besides throughput
// and per-operation latency it reports the process's peak resident memory
// during each case (the origin server, the API, the stand-ins and the
// runtime's control plane all live in this process): constant-memory
// streaming shows as a peak that does not follow the bytes moved.
func BenchmarkUploadURLs(b *testing.B) {
	s := buildStack(b, 0, session.Config{URLUploads: session.URLUploadConfig{AllowPrivate: true}}, awsParts{})
	s.exec(s.alice, "bench-urls", "1")
	origin := benchOrigin(b)
	const small, count, big = 1 << 20, 200, 1 << 30
	var urls []string
	for i := range count {
		urls = append(urls, fmt.Sprintf("%s/f/%d?size=%d", origin, i, small))
	}
	cases := []struct {
		name  string
		bytes int64
		run   func(b *testing.B)
	}{
		{"200x1MiB/upload-urls", count * small, func(b *testing.B) {
			s.uploadAll(b, "bench-urls", urls, count)
		}},
		{"200x1MiB/baseline-put-content", count * small, func(b *testing.B) {
			s.putAll(b, "bench-urls", count, small)
		}},
		{"1x1GiB/upload-urls", big, func(b *testing.B) {
			s.uploadAll(b, "bench-urls", []string{fmt.Sprintf("%s/f/big.bin?size=%d", origin, big)}, 1)
		}},
		{"1x1GiB/baseline-upload-url-import", big, func(b *testing.B) {
			s.presignedUpload(b, "bench-urls", big)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(c.bytes)
			resetPeakRSS(b)
			samples := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				c.run(b)
				samples = append(samples, time.Since(start))
			}
			b.StopTimer()
			reportLatency(b, samples)
			b.ReportMetric(peakRSSMiB(b), "peak-RSS-MiB")
		})
	}
}

// benchOrigin serves /f/NAME?size=N: N bytes of a repeating pattern, named
// NAME by Content-Disposition, made as they are sent.
func benchOrigin(b *testing.B) string {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size, err := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if err != nil {
			http.Error(w, "size", http.StatusBadRequest)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/f/")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.bin"`)
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		_, _ = io.CopyN(w, repeatReader(chunk), size)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

type repeatReader []byte

func (r repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r)
	}
	return n, nil
}

func (s *stack) uploadAll(b *testing.B, sid string, urls []string, want int) {
	var res uploadResult
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/files/upload-urls", map[string]any{"urls": urls, "destDir": "bench"}, &res)
	if res.Status != "success" || len(res.Uploaded) != want {
		b.Fatalf("upload-urls: %+v", res)
	}
}

// putAll writes n files of size bytes inline, 8 at a time.
func (s *stack) putAll(b *testing.B, sid string, n, size int) {
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, n)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/v1/sessions/%s/files/content?path=bench/p%d.bin", s.url, sid, i), bytes.NewReader(data))
				req.Header.Set("Authorization", "Bearer "+s.alice)
				resp, err := s.client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("PUT %d: status %d", i, resp.StatusCode)
					}
				}
				errs <- err
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// presignedUpload sends size bytes through upload-url, the S3 stand-in and
// import: the path a client takes today for a large file it has.
func (s *stack) presignedUpload(b *testing.B, sid string, size int64) {
	var up struct {
		UploadURL  string            `json:"uploadUrl"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers"`
		TransferID string            `json:"transferId"`
	}
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/files/upload-url", map[string]any{"path": "bench/big.bin", "sizeBytes": size}, &up)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	req, _ := http.NewRequest(up.Method, up.UploadURL, io.LimitReader(repeatReader(chunk), size))
	req.ContentLength = size
	for k, v := range up.Headers {
		if http.CanonicalHeaderKey(k) != "Content-Length" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("upload: %d", resp.StatusCode)
	}
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/files/import", map[string]any{"transferId": up.TransferID}, nil)
}

// resetPeakRSS starts a new peak: writing 5 to clear_refs resets VmHWM.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("reset peak RSS: %v", err)
	}
}

// peakRSSMiB is VmHWM of this process, in MiB.
func peakRSSMiB(b *testing.B) float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
