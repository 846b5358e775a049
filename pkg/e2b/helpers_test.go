package e2b

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// checkLeaks fails the test when goroutines started during it are still
// alive after every cleanup registered later (servers, clients) has run.
// Call it first in a test.
func checkLeaks(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= base {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines leaked: %d alive, %d before\n%s", n, base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// testConfig targets fake servers with fast retries.
func testConfig(apiURL, sandboxURL string) Config {
	return Config{IgnoreEnv: true, APIKey: "e2b_test", APIURL: apiURL, SandboxURL: sandboxURL,
		Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}}
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fakeServer starts an httptest server closed at cleanup.
func fakeServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// scripted answers successive requests with the given statuses and bodies,
// repeating the last one, and counts the requests.
type scripted struct {
	hits    atomic.Int32
	replies []reply
}

type reply struct {
	status int
	body   string
	header map[string]string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.hits.Add(1)) - 1
	if n >= len(s.replies) {
		n = len(s.replies) - 1
	}
	rp := s.replies[n]
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if strings.HasPrefix(strings.TrimSpace(rp.body), "{") || strings.HasPrefix(strings.TrimSpace(rp.body), "[") {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	_, _ = w.Write([]byte(rp.body))
}

const sandboxJSON = `{"templateID":"base","sandboxID":"abc123","clientID":"6532622b","envdVersion":"0.6.13","envdAccessToken":"tok","domain":"example.test"}`
