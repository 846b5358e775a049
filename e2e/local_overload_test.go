package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestSpawnTimeoutIsBackpressure: a sandbox whose start times out (as on a
// host too loaded to schedule it: here a start timeout no agent can meet)
// is answered 429 with Retry-After and a problem naming the overload, not
// a 5xx or a 200 carrying a problem, and nothing of the spawn's internals.
func TestSpawnTimeoutIsBackpressure(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice},
		Runtime: e2blocal.Config{StartTimeout: time.Nanosecond, WarmPool: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	req, _ := http.NewRequest("POST", svc.URL+"/v1/sessions/busy/execute", strings.NewReader(`{"code":"1"}`))
	req.Header.Set("Authorization", "Bearer "+alice.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("execute on an overloaded host: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	var p struct{ Type, Detail string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"bwrap", "readiness", "deadline", "/"} {
		if strings.Contains(p.Detail, leak) {
			t.Errorf("the detail names %q: %s", leak, b)
		}
	}
	if !strings.Contains(p.Detail, "overloaded") || !strings.HasSuffix(p.Type, "/limit-reached") {
		t.Errorf("the detail does not say the host is overloaded: %s", b)
	}
}
