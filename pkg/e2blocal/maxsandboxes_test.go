//go:build linux

package e2blocal

import (
	"net/http"
	"sync"
	"testing"
)

// TestMaxSandboxes checks the cap holds under concurrent creates, answers
// both create versions with E2B's 429 body, counts paused sandboxes and
// frees a slot on kill.
func TestMaxSandboxes(t *testing.T) {
	const limit = 3
	rt := startRuntime(t, Config{MaxSandboxes: limit})
	var mu sync.Mutex
	var created []string
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range limit + 2 {
		wg.Go(func() {
			r := do(t, "POST", rt.APIURL()+"/v2/sandboxes", map[string]any{"templateID": "base"}, map[string]string{"X-API-Key": testKey})
			mu.Lock()
			defer mu.Unlock()
			statuses[r.status]++
			if r.status == http.StatusCreated {
				var sb sandboxBody
				r.decode(t, &sb)
				created = append(created, sb.SandboxID)
			}
		})
	}
	wg.Wait()
	if statuses[http.StatusCreated] != limit || statuses[http.StatusTooManyRequests] != 2 {
		t.Fatalf("concurrent creates: %v, want %d created and 2 refused", statuses, limit)
	}
	if r := api(t, rt, "POST", "/sandboxes/"+created[0]+"/pause", nil); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/sandboxes", "/v2/sandboxes"} {
		r := api(t, rt, "POST", path, map[string]any{"templateID": "base"})
		var body apiError
		r.decode(t, &body)
		if r.status != http.StatusTooManyRequests || body.Code != http.StatusTooManyRequests || body.Message != "you have reached the maximum number of concurrent E2B sandboxes (3). If you need more, please visit 'https://e2b.dev/docs/billing'" {
			t.Fatalf("create %s at the cap: %d %s", path, r.status, r.body)
		}
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+created[0], nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	if r := api(t, rt, "POST", "/sandboxes", map[string]any{"templateID": "base"}); r.status != http.StatusCreated {
		t.Fatalf("create after a kill freed a slot: %d %s", r.status, r.body)
	}
}
