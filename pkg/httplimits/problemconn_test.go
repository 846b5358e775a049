package httplimits_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/httplimits"
)

// TestNetHTTPErrorsAreProblems: requests net/http refuses before any
// handler runs are answered problem+json with net/http's status, and a
// handler's own plain-text answer is left as it is.
func TestNetHTTPErrorsAreProblems(t *testing.T) {
	t.Parallel()
	url := serve(t, httplimits.Limits{MaxHeaderBytes: 1 << 10}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "handler says no", http.StatusTeapot)
	}))
	addr := strings.TrimPrefix(url, "http://")
	cases := []struct {
		name, request string
		status        int
		contentType   string
		detail        string
	}{
		{"bad request line", "GARBAGE\r\n\r\n", 400, "application/problem+json", "could not be parsed"},
		{"headers too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "application/problem+json", "too large"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "application/problem+json", "missing required host header"},
		{"unsupported transfer encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "application/problem+json", "unsupported transfer encoding"},
		{"a handler's own text", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 418, "text/plain; charset=utf-8", "handler says no"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, c.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.contentType || !strings.Contains(strings.ToLower(string(b)), c.detail) {
				t.Fatalf("%d %q %s, want %d %q with %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.contentType, c.detail)
			}
			if c.contentType == "application/problem+json" {
				var p struct {
					Type   string
					Status int
				}
				if err := json.Unmarshal(b, &p); err != nil || p.Status != c.status || !strings.HasPrefix(p.Type, "https://") {
					t.Fatalf("problem %s: %v", b, err)
				}
			}
		})
	}
}
