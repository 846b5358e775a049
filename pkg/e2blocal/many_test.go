//go:build linux

package e2blocal

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTwoHundredSandboxes keeps 200 sandboxes alive at once, each answering
// through the routing address, and checks a sample can run commands.
func TestTwoHundredSandboxes(t *testing.T) {
	const n = 200
	// Capacity, not latency, is under test: a machine busy with other test
	// packages may take longer than the default 15 s to start one of them.
	rt := startRuntime(t, Config{StartTimeout: time.Minute})
	sbs := createMany(t, rt, n)
	r := api(t, rt, "GET", "/v2/sandboxes?limit=1", nil)
	if got := r.header.Get("X-Total-Running"); got != strconv.Itoa(n) {
		t.Fatalf("X-Total-Running %q, want %d", got, n)
	}
	for i, sb := range sbs {
		if h := sbx(t, rt, sb.SandboxID, "49983", "GET", "/health", nil); h.status != http.StatusNoContent {
			t.Fatalf("sandbox %d health: %d", i, h.status)
		}
		if i%40 == 0 {
			if got := strings.TrimSpace(mustRun(t, rt, sb, "echo $((6*7))")); got != "42" {
				t.Fatalf("sandbox %d: %q", i, got)
			}
		}
	}
}
