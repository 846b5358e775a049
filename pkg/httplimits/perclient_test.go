package httplimits_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/httplimits"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address local, another client as far as the server can tell.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestSlowBodyFloodLeavesOthersServed: one address opening more slow-body
// connections than the server's total holds its share and no more: the
// excess is answered 429 with Retry-After at once, and another address's
// /healthz is answered while the flood's connections stay open.
func TestSlowBodyFloodLeavesOthersServed(t *testing.T) {
	t.Parallel()
	const total, share, flood = 40, 10, 60
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	url := serve(t, httplimits.Limits{MaxConns: total, MaxConnsPerClient: share, BodyIdleTimeout: time.Minute}, mux)
	addr := strings.TrimPrefix(url, "http://")
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
	refused := 0
	for range flood {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		// Headers, then a body that never comes.
		if _, err := io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nab"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			continue // held open: its body is still awaited
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(b), "limit-reached") {
			t.Fatalf("a refused connection: %d %v %s", resp.StatusCode, resp.Header, b)
		}
		refused++
	}
	if refused != flood-share {
		t.Fatalf("%d of %d flood connections refused, want %d", refused, flood, flood-share)
	}
	for _, other := range []string{"127.0.0.2", "127.0.0.3"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		resp, err := clientFrom(other).Do(req)
		cancel()
		if err != nil {
			t.Fatalf("healthz from %s during the flood: %v", other, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz from %s: %d", other, resp.StatusCode)
		}
	}
}

// TestPerClientSlotsReturn: a client whose connections closed may open as
// many again.
func TestPerClientSlotsReturn(t *testing.T) {
	t.Parallel()
	url := serve(t, httplimits.Limits{MaxConnsPerClient: 2}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	c := clientFrom("127.0.0.1")
	c.Transport.(*http.Transport).DisableKeepAlives = true
	for i := range 6 {
		// The server closes its side just after answering: a slot comes
		// back at once or very soon, never after a timeout.
		testwait.Until(t, 3*time.Second, func() error {
			resp, err := c.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("request %d: %d, the slots of closed connections did not come back", i, resp.StatusCode)
			}
			return nil
		})
	}
}
