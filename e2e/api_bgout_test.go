package e2e

import (
	"fmt"
	"net/http"
	"strings"
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

// TestEndToEndBackgroundOutputReads: a command printing every 50 ms, read
// over and over with GET …/output and no wait, gives every line exactly
// once and in order, then its exit code; the whole output stays in the
// file the reads name.
func TestEndToEndBackgroundOutputReads(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	base := "/v1/sessions/bg-output-reads/commands"
	var started struct {
		CommandID string `json:"commandId"`
	}
	resp := s.json(s.alice, "POST", base, map[string]any{"cmd": "for i in $(seq 1 50); do echo line$i; sleep 0.05; done; exit 7", "background": true}, &started)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	var all strings.Builder
	var read struct {
		Running    bool   `json:"running"`
		ExitCode   *int   `json:"exitCode"`
		Stdout     string `json:"stdout"`
		StdoutPath string `json:"stdoutPath"`
	}
	reads := 0
	for read.Running = true; read.Running; reads++ {
		if reads > 2000 {
			t.Fatalf("still running after %d reads", reads)
		}
		read.ExitCode = nil
		if resp := s.json(s.alice, "GET", base+"/"+started.CommandID+"/output", nil, &read); resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d: %d", reads, resp.StatusCode)
		}
		all.WriteString(read.Stdout)
	}
	var want strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&want, "line%d\n", i)
	}
	if all.String() != want.String() || read.ExitCode == nil || *read.ExitCode != 7 || reads < 3 {
		t.Fatalf("%d reads gave %q, exit %v; want each line once, in order, and exit code 7", reads, all.String(), read.ExitCode)
	}
	if resp, file := s.req(s.alice, "GET", "/v1/sessions/bg-output-reads/files/content?path="+read.StdoutPath, nil); resp.StatusCode != http.StatusOK || string(file) != want.String() {
		t.Fatalf("the named file: %d %q", resp.StatusCode, file)
	}
}
