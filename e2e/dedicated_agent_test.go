package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// withAgent is cfg with the tests' dedicated agent, if one is named.
func withAgent(cfg e2blocal.Config) e2blocal.Config {
	if cfg.Agent == "" {
		cfg.Agent = e2btest.Agent()
	}
	return cfg
}

// buildAgent builds cmd/sessionbox-agent into dir with this test's own Go
// toolchain (go test puts its GOROOT/bin first in PATH) and returns its path.
func buildAgent(t testing.TB, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go toolchain to build the agent: %v", err)
	}
	out := filepath.Join(dir, "sessionbox-agent")
	cmd := exec.Command(goBin, "build", "-o", out, "github.com/sessionbox/sessionbox/cmd/sessionbox-agent")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the agent: %v\n%s", err, b)
	}
	return out
}

// TestDedicatedAgent: a runtime given cmd/sessionbox-agent as
// Config.Agent runs it as each sandbox's init (the binary bound at
// /opt/e2b/agent is the one built here), and executes, commands, file
// writes and reads and sudo work through it.
func TestDedicatedAgent(t *testing.T) {
	dir := t.TempDir()
	agentPath := buildAgent(t, dir)
	bin, err := os.ReadFile(agentPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0",
		DataDir: filepath.Join(dir, "data"), Agent: agentPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	a := adapter(t, rt.APIURL(), rt.SandboxURL())
	info := create(t, a, nil)

	run := func(cmd string) session.ShellOutcome {
		t.Helper()
		out, err := a.RunCommand(ctx, info.ID, cmd, 30*time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out
	}
	if out := run("sha256sum /opt/e2b/agent"); out.ExitCode != 0 || !strings.HasPrefix(out.Stdout, hex.EncodeToString(sum[:])+" ") {
		t.Fatalf("the sandbox's agent is not the dedicated binary (sha256 %x): %+v", sum, out)
	}
	res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "import os\nprint(os.environ['SBX_TEST'])\n6 * 7"}, nil)
	if err != nil || !res.Success || res.Stdout != "yes\n" || len(res.Results) != 1 || res.Results[0].Text != "42" {
		t.Fatalf("execute: %+v, %v", res, err)
	}
	if err := a.WriteFile(ctx, info.ID, "/home/user/agent.txt", strings.NewReader("through the dedicated agent\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	r, err := a.ReadFile(ctx, info.ID, "/home/user/agent.txt")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "through the dedicated agent\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if out := run("cat /home/user/agent.txt && whoami"); out.Stdout != "through the dedicated agent\nuser\n" {
		t.Fatalf("command: %+v", out)
	}
	// A root runtime's sandboxes have root, through the agent's own sudo
	// (/opt/e2b/sbin/sudo is the same binary); a non-root one's have none.
	if os.Geteuid() == 0 {
		if out := run(`sudo whoami && readlink /opt/e2b/sbin/sudo && cd /tmp && sudo bash -c 'pwd; exit 7'; echo "exit $?"`); out.Stdout != "root\n/opt/e2b/agent\n/tmp\nexit 7\n" {
			t.Fatalf("sudo: %+v", out)
		}
	} else if out := run("sudo true 2>/dev/null || echo none"); out.Stdout != "none\n" {
		t.Fatalf("sudo in a single-user sandbox: %+v", out)
	}
}
