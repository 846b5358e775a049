package httplimits_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/httplimits"
)

func serve(t *testing.T, l httplimits.Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := l.Serve(ln, h)
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestStreamOutlivesBodyDeadline: once the body has been read, a response
// may stream for longer than the body's idle timeout.
func TestStreamOutlivesBodyDeadline(t *testing.T) {
	t.Parallel()
	const idle = 300 * time.Millisecond
	url := serve(t, httplimits.Limits{BodyIdleTimeout: idle}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for i := range 4 {
			time.Sleep(idle)
			_, _ = io.WriteString(w, strings.Repeat("x", i+1)+"\n")
			_ = http.NewResponseController(w).Flush()
		}
	}))
	resp, err := http.Post(url, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "x\nxx\nxxx\nxxxx\n" {
		t.Fatalf("stream: %q, %v", b, err)
	}
}

// TestStalledBodyDropped: a body that stops arriving fails the handler's
// read with ErrBodyTimeout and the connection is closed.
func TestStalledBodyDropped(t *testing.T) {
	t.Parallel()
	got := make(chan error, 1)
	url := serve(t, httplimits.Limits{BodyIdleTimeout: 200 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
	}))
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	select {
	case err := <-got:
		if err != httplimits.ErrBodyTimeout {
			t.Fatalf("handler's read: %v, want ErrBodyTimeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still reading a stalled body")
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, bufio.NewReader(c)); err != nil {
		t.Fatalf("connection not closed by the server: %v", err)
	}
}
