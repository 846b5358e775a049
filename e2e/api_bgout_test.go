package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// TestEndToEndBackgroundFirstOutput: a background command that prints at
// once and ends gives its reader every line exactly once, the first
// included, whether read back by reattaching (NDJSON) or by its status
// once ended (JSON). Started over and over, since losing the first lines
// depended on how fast the command printed.
func TestEndToEndBackgroundFirstOutput(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const sid = "bg-first-output"
	base := "/v1/sessions/" + sid + "/commands"
	const want = "first\nsecond\n"
	for i := range 20 {
		var started struct {
			CommandID string `json:"commandId"`
		}
		resp := s.json(s.alice, "POST", base, map[string]any{"cmd": "echo first; echo second; echo err >&2", "background": true}, &started)
		if resp.StatusCode != http.StatusAccepted || started.CommandID == "" {
			t.Fatalf("start %d: %d %+v", i, resp.StatusCode, started)
		}
		var got *commandResult
		if i%2 == 0 {
			sc := s.openStream(t, "GET", base+"/"+started.CommandID, "")
			var seen []ndjsonLine
			done := readUntil(t, sc, &seen, isDone)
			if done == nil {
				t.Fatalf("run %d: reattach ended without done: %+v", i, seen)
			}
			got = done.Result
		} else {
			var info commandInfo
			testwait.Until(t, 30*time.Second, func() error {
				s.json(s.alice, "GET", base+"/"+started.CommandID, nil, &info)
				if info.Running {
					return fmt.Errorf("still running: %+v", info)
				}
				return nil
			})
			got = info.Result
		}
		if got == nil || got.Stdout != want || got.Stderr != "err\n" || got.ExitCode != 0 {
			t.Fatalf("run %d: read back %+v; want stdout %q and stderr %q, each line once", i, got, want, "err\n")
		}
	}
}
