//go:build linux

package e2blocal

import (
	"strings"
	"testing"
)

// TestSandboxImage checks what E2B's base image gives commands beyond the
// protocol: `python`, and envd and the interpreter on the sandbox's own
// loopback.
func TestSandboxImage(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1"})
	cases := []struct{ name, script, want string }{
		{"python is python3", `python --version && python -c 'import sys; print(sys.version_info[0])'`, "3\n"},
		{"envd inside", `curl -sS -o /dev/null -w '%{http_code}\n' http://localhost:49983/health`, "204\n"},
		{"interpreter inside", `curl -fsS -o /dev/null -w '%{http_code}\n' http://127.0.0.1:49999/health`, "200\n"},
		{"envd inside still wants the token", `curl -sS -o /dev/null -w '%{http_code}\n' http://localhost:49983/envs`, "401\n"},
		{"interpreter inside runs code with the token", `curl -fsS -H "X-Access-Token: $TOKEN" -d '{"code":"6*7"}' http://127.0.0.1:49999/execute | grep -o '"text":"42"' | head -1`, "\"text\":\"42\"\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustRun(t, rt, sb, "TOKEN="+sb.EnvdAccessToken+"\n"+c.script)
			if !strings.HasSuffix(got, c.want) {
				t.Fatalf("got %q, want it to end with %q", got, c.want)
			}
		})
	}
}
