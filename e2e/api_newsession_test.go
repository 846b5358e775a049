package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestNewSessionConcurrency holds the start path's guarantees through the
// whole local stack, with sandboxes from the warm pool (kernels running
// before their session exists) and spawned on demand once it is empty. The
// tenant cap is 5, kept in the table's slots (no provider List on a start).
func TestNewSessionConcurrency(t *testing.T) {
	const limit = 5
	s := newStackWith(t, 0, session.Config{MaxLiveSandboxesPerTenant: limit})
	t.Run("50 executes on a new session make one sandbox", func(t *testing.T) {
		const n = 50
		var wg sync.WaitGroup
		results := make([]string, n)
		for i := range n {
			wg.Go(func() {
				resp, body := s.req(s.alice, "POST", "/v1/sessions/fifty/execute", strings.NewReader(fmt.Sprintf(`{"code":"%d * 2"}`, i)))
				results[i] = fmt.Sprintf("%d %s", resp.StatusCode, body)
			})
		}
		wg.Wait()
		for i, r := range results {
			if !strings.HasPrefix(r, "200 ") || !strings.Contains(r, fmt.Sprintf(`"text":"%d"`, i*2)) {
				t.Fatalf("execute %d: %s", i, r)
			}
		}
		if got := s.sessionSandboxes("alice", "fifty"); len(got) != 1 {
			t.Fatalf("sandboxes of the session: %v, want one", got)
		}
		s.stopSession(s.alice, "fifty")
	})
	t.Run("the tenant cap holds exactly under a burst of 30 starts", func(t *testing.T) {
		const starts = 30 // all of the cap alice's while she is alone
		statuses := make([]int, starts)
		var wg sync.WaitGroup
		for i := range starts {
			wg.Go(func() {
				resp, body := s.req(s.alice, "POST", fmt.Sprintf("/v1/sessions/burst-%d/sandbox/start", i), strings.NewReader(`{}`))
				statuses[i] = resp.StatusCode
				if resp.StatusCode == http.StatusTooManyRequests {
					if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || resp.Header.Get("Retry-After") == "" ||
						!strings.Contains(string(body), fmt.Sprintf("the limit is %d", limit)) {
						t.Errorf("refused start %d: %s, Retry-After %q: %s", i, ct, resp.Header.Get("Retry-After"), body)
					}
				}
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, st := range statuses {
			count[st]++
		}
		if count[http.StatusOK] != limit || count[http.StatusTooManyRequests] != starts-limit {
			t.Fatalf("statuses %v, want %d started and %d refused", count, limit, starts-limit)
		}
		live := 0
		for i := range starts {
			live += len(s.sessionSandboxes("alice", fmt.Sprintf("burst-%d", i)))
		}
		if live != limit {
			t.Fatalf("%d live sandboxes after the burst, want %d", live, limit)
		}
		// A stop gives its slot back: one more start fits, and only one.
		for i := range starts {
			if statuses[i] == http.StatusOK {
				s.stopSession(s.alice, fmt.Sprintf("burst-%d", i))
				break
			}
		}
		for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
			resp, body := s.req(s.alice, "POST", fmt.Sprintf("/v1/sessions/after-%d/sandbox/start", i), strings.NewReader(`{}`))
			if resp.StatusCode != want {
				t.Fatalf("start %d after a stop: %d %s, want %d", i, resp.StatusCode, body, want)
			}
		}
	})
}
