package inprocess_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/inprocess"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo/{name}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.RequestURI+" "+r.RemoteAddr+" "+r.PathValue("name"))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /empty", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	c := &http.Client{Transport: inprocess.Transport{Handler: mux}}

	resp, err := c.Post("http://h.test/echo/a?x=1", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(b) != "hello" || resp.Header.Get("X-Seen") != "/echo/a?x=1 in-process a" {
		t.Errorf("echo: %d %q %q", resp.StatusCode, b, resp.Header.Get("X-Seen"))
	}
	if resp.Request == nil || resp.Request.URL.Host != "h.test" {
		t.Errorf("response's request: %v", resp.Request)
	}

	resp, err = c.Get("http://h.test/empty")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("empty: %v %v", resp, err)
	}

	if _, err := c.Get("http://h.test/panic"); !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: %v, want an error naming it and wrapping io.ErrUnexpectedEOF", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.test/empty", nil)
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// BenchmarkRoundTrip is a small POST answered over loopback TCP (an
// httptest server) and in process.
func BenchmarkRoundTrip(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"sandboxID":"abc"}`)
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"tcp", srv.Client(), srv.URL},
		{"in-process", &http.Client{Transport: inprocess.Transport{Handler: h}}, "http://h.test"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tc.c.Post(tc.url+"/sandboxes", "application/json", strings.NewReader(`{"templateID":"base"}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
