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
// Goroutines of the local runtime that TestMain runs in the background are
// not the client's and are ignored. Call it first in a test.
func checkLeaks(t *testing.T) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() { waitNoNewGoroutines(t, before, "pkg/e2blocal", "os/exec.") })
}

// waitNoNewGoroutines waits until every goroutine not in before, except
// those whose stack mentions one of ignore, has ended, and fails the test
// if some are still alive after 10s.
func waitNoNewGoroutines(t testing.TB, before map[string]string, ignore ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var leaked []string
		for id, stack := range goroutines() {
			if _, old := before[id]; !old && !containsAny(stack, ignore) {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// goroutines maps goroutine ids to their stacks.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if id, _, ok := strings.Cut(strings.TrimPrefix(g, "goroutine "), " "); ok {
			out[id] = g
		}
	}
	return out
}

// testConfig targets fake servers with fast retries.
func testConfig(apiURL, sandboxURL string) Config {
	return Config{APIKey: "e2b_test", APIURL: apiURL, SandboxURL: sandboxURL,
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
