//go:build linux

package envd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// BenchmarkStartTrue is one full Start round trip: spawn `true`, stream
// start and end back.
func BenchmarkStartTrue(b *testing.B) {
	e := newEnv(b)
	for _, codec := range codecs {
		b.Run(codec.name, func(b *testing.B) {
			c := e.proc(codec.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s, err := c.Start(ctx, startReq("/bin/true"))
				if err != nil {
					b.Fatal(err)
				}
				for s.Receive() {
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				_ = s.Close()
			}
		})
	}
}

func BenchmarkFileWrite(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"16MiB", 16 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			e := newEnv(b)
			data := bytes.Repeat([]byte{'x'}, size.n)
			u := filesURL(e.url, map[string]string{"path": "bench.bin"})
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest("POST", u, bytes.NewReader(data))
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

func BenchmarkFileRead(b *testing.B) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"16MiB", 16 << 20}} {
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(size.name+"/"+enc, func(b *testing.B) {
				e := newEnv(b)
				mustWrite(b, e.home+"/bench.bin", string(bytes.Repeat([]byte("0123456789abcdef"), size.n/16)))
				u := filesURL(e.url, map[string]string{"path": "bench.bin"})
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest("GET", u, nil)
					req.Header.Set("Accept-Encoding", enc)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}
