//go:build linux

package e2blocal

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer the runtime's goroutines may log into.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRuntimeLogsThroughConfigLogger: what the runtime reports goes to
// Config.Logger as structured records (here JSON), not to the log package.
func TestRuntimeLogsThroughConfigLogger(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	// DiskMB < 0 always makes the runtime warn that homes are unlimited.
	startRuntime(t, Config{DiskMB: -1, WarmPool: -1, Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	found := false
	for line := range strings.Lines(out.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q: %v", line, err)
		}
		if rec["msg"] == "e2blocal: sandbox homes are not size-limited" && rec["reason"] == "DiskMB < 0" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no record of unlimited homes with its reason:\n%s", out.String())
	}
}
