package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMCPJSClients runs scripts/mcp/mcp.test.mjs: the official MCP
// TypeScript SDK over stdio (`sessionbox mcp`, built here) and streamable
// HTTP, and LangChain's MCP adapters, against a local stack.
func TestMCPJSClients(t *testing.T) {
	script, err := filepath.Abs("../scripts/mcp/mcp.test.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := jsDepsInstalled("@modelcontextprotocol/sdk", "@langchain/mcp-adapters"); err != nil {
		if testing.Short() {
			t.Skipf("the MCP SDKs are not installed (%v); run scripts/setup.sh", err)
		}
		t.Fatalf("the MCP JS tests need node and the npm SDKs: %v (run scripts/setup.sh; -short skips it)", err)
	}
	bin := buildSessionbox(t)
	name, data := buildWheel(t, "jswheel", "1.0", "from-the-wheel")
	wheel := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(wheel, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runNodeTests(t, newStack(t), script, 10*time.Minute, "SESSIONBOX_BIN="+bin, "SESSIONBOX_TEST_WHEEL="+wheel)
}

// TestMCPInspector runs scripts/mcp/inspector.test.mjs: the official MCP
// inspector in CLI mode over stdio (`sessionbox mcp`, built here) and
// streamable HTTP against a local stack: bounds in the schemas, results
// under the cap, an image with text, a bad key refused at start.
func TestMCPInspector(t *testing.T) {
	script, err := filepath.Abs("../scripts/mcp/inspector.test.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := jsDepsInstalled("@modelcontextprotocol/inspector"); err != nil {
		if testing.Short() {
			t.Skipf("the MCP inspector is not installed (%v); run scripts/setup.sh", err)
		}
		t.Fatalf("the inspector test needs node and the npm inspector: %v (run scripts/setup.sh; -short skips it)", err)
	}
	bin := filepath.Join(t.TempDir(), "sessionbox")
	build := exec.Command("go", "build", "-o", bin, "github.com/sessionbox/sessionbox/cmd/sessionbox")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sessionbox: %v\n%s", err, out)
	}
	runNodeTests(t, newStack(t), script, 10*time.Minute, "SESSIONBOX_BIN="+bin)
}

// runNodeTests runs a node test script against s, with its URL and alice's
// key in SESSIONBOX_URL and SESSIONBOX_API_KEY and env besides; a failing
// script fails the test with its output, a passing one logs it.
func runNodeTests(t *testing.T, s *stack, script string, timeout time.Duration, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", script)
	cmd.Env = append(append(os.Environ(), "SESSIONBOX_URL="+s.url, "SESSIONBOX_API_KEY="+s.alice), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", filepath.Base(script), err, out)
	}
	t.Logf("%s", out)
}

// jsDepsInstalled checks node and the npm packages under scripts/.
func jsDepsInstalled(pkgs ...string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return err
	}
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join("../scripts/node_modules", p, "package.json")); err != nil {
			return err
		}
	}
	return nil
}
