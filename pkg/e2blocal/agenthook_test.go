//go:build linux

package e2blocal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// noHookEnv makes TestMain skip RunAgentIfRequested, as a main that forgot it.
const noHookEnv = "E2BLOCAL_TEST_NO_AGENT_HOOK"

// TestAgentHookRequired: a runtime started in a process that never called
// RunAgentIfRequested fails at once, naming the hook, instead of timing out
// on every create; given a dedicated agent (Config.Agent) it needs no hook.
func TestAgentHookRequired(t *testing.T) {
	t.Parallel()
	if os.Getenv(noHookEnv) != "" {
		// The child: this process skipped the hook.
		rt, err := Start(context.Background(), Config{DataDir: t.TempDir(), APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0"})
		if err == nil {
			rt.Close()
			t.Fatal("Start succeeded in a process that never called RunAgentIfRequested")
		}
		if !strings.Contains(err.Error(), "RunAgentIfRequested was not called in main") {
			t.Fatalf("Start: %v; want it to name RunAgentIfRequested", err)
		}
		// No sandbox starts here, so any executable stands for the agent.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		rt, err = Start(context.Background(), Config{DataDir: t.TempDir(), APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0",
			Agent: exe, WarmPool: -1})
		if err != nil {
			t.Fatalf("Start with Config.Agent and no hook: %v", err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAgentHookRequired$", "-test.v")
	cmd.Env = append(os.Environ(), noHookEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAgentHookRequired") {
		t.Fatalf("child without the hook: %v\n%s", err, out)
	}
}

// TestAgentSource: Config.Agent must name an executable regular file;
// anything else fails Start with an error naming the path.
func TestAgentSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exe := write("agent", 0o755)
	own, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src, want, err string
	}{
		{"own binary", "", own, ""},
		{"executable", exe, exe, ""},
		{"missing", filepath.Join(dir, "none"), "", "no such file"},
		{"not executable", write("plain", 0o644), "", "not an executable file"},
		{"a directory", dir, "", "not an executable file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := jail.AgentSource(c.src)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.src) {
					t.Fatalf("agentSource(%q) = %q, %v; want an error naming it and %q", c.src, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("agentSource(%q) = %q, %v; want %q", c.src, got, err, c.want)
			}
		})
	}
}
