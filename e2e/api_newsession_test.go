package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestNewSessionConcurrency holds the start path's guarantees through the
// whole local stack, with sandboxes from the warm pool (kernels running
// before their session exists) and spawned on demand once it is empty.
func TestNewSessionConcurrency(t *testing.T) {
	s := newStack(t)
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
		const starts, limit = 30, 20 // the default cap, all of it alice's while she is alone
		statuses := make([]int, starts)
		var wg sync.WaitGroup
		for i := range starts {
			wg.Go(func() {
				resp, _ := s.req(s.alice, "POST", fmt.Sprintf("/v1/sessions/burst-%d/sandbox/start", i), strings.NewReader(`{}`))
				statuses[i] = resp.StatusCode
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
	})
}
