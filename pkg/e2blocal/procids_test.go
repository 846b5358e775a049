//go:build linux

package e2blocal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxIDNotInCommandLines: /proc/PID/cmdline is world-readable, so
// another local user reads every process's argv; no process (bwrap, its
// init, the agent, the kernel, slirp4netns) may carry a sandbox's id there.
func TestSandboxIDNotInCommandLines(t *testing.T) {
	rt := startRuntime(t, Config{})
	bodies := []map[string]any{{"templateID": "code-interpreter-v1"}, {"templateID": "base"}}
	if rt.noNet == nil {
		bodies = append(bodies, map[string]any{"templateID": "base", "allow_internet_access": true})
	}
	var ids []string
	for _, b := range bodies {
		sb := createSandbox(t, rt, b)
		mustRun(t, rt, sb, "true")
		ids = append(ids, sb.SandboxID)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	seen := 0
	for _, p := range cmdlines {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue // gone, or a kernel thread
		}
		seen++
		for _, id := range ids {
			if strings.Contains(string(data), id) {
				t.Errorf("%s names sandbox %s: %q", p, id, strings.ReplaceAll(string(data), "\x00", " "))
			}
		}
	}
	if seen == 0 {
		t.Fatal("read no command line")
	}
}
