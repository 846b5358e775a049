package e2b

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer counts the TCP connections clients open to it.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// TestConnectionsAreReused checks that finished responses are consumed to
// the end, so sequential calls share one keep-alive connection per host.
func TestConnectionsAreReused(t *testing.T) {
	checkLeaks(t)
	api, apiConns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, sandboxJSON+"\n")
			return
		}
		_, _ = io.WriteString(w, `{"sandboxID":"abc123","state":"running"}`+"\n")
	}))
	sbx, sbxConns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/execute":
			for _, l := range []string{`{"type":"result","is_main_result":true,"text":"2"}`, `{"type":"end_of_execution"}`} {
				_, _ = io.WriteString(w, l+"\n")
				w.(http.Flusher).Flush()
			}
			// The end of the chunked body comes a moment after the last
			// line, as from a real server finishing up.
			time.Sleep(20 * time.Millisecond)
		case "/files":
			_, _ = io.WriteString(w, `[{"path":"/a","name":"a","type":"file"}]`+"\n")
		case "/contexts":
			_, _ = io.WriteString(w, "[]\n")
		}
	}))
	c := newTestClient(t, testConfig(api.URL, sbx.URL))
	ctx := context.Background()
	sb, err := c.Create(ctx, CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.GetInfo(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		if exec, err := sb.RunCode(ctx, "1+1", RunCodeOptions{}); err != nil || exec.Text() != "2" {
			t.Fatal(exec, err)
		}
		if _, err := sb.Files().Write(ctx, "/a", strings.NewReader("x"), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.ListContexts(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if apiConns.Load() != 1 || sbxConns.Load() != 1 {
		t.Errorf("opened %d API and %d sandbox connections, want 1 each", apiConns.Load(), sbxConns.Load())
	}
}
