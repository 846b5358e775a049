//go:build linux

package e2blocal

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
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
