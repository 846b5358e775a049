//go:build linux

package e2blocal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestSandboxIDNotWorldReadable: /proc/PID/cmdline is world-readable, so
// another local user reads every process's argv; no process (bwrap, its
// init, the agent, the kernel, slirp4netns) may carry a sandbox's id there,
// nor may the other world-readable places naming a sandbox's host paths.
func TestSandboxIDNotWorldReadable(t *testing.T) {
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
	// Other world-readable places that name the sandbox's host resources:
	// bound unix sockets, the host's mount table (home images), the loop
	// devices' backing files, and each process's cgroup.
	places := []string{"/proc/net/unix", "/proc/self/mountinfo"}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	places = append(places, loops...)
	for _, id := range ids {
		for _, pid := range jail.ProcessTree(rt.lookup(id).proc.Cmd.Process.Pid) {
			places = append(places, fmt.Sprintf("/proc/%d/cgroup", pid))
		}
	}
	for _, p := range places {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(data), id) {
				t.Errorf("%s names sandbox %s", p, id)
			}
		}
	}
}
