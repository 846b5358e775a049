//go:build linux

package e2blocal

import (
	"os"
	"strings"
	"testing"
)

// TestJSKernelInSandbox: node and the type stripper are visible inside a
// sandbox (both live under /usr), so javascript and typescript cells run
// there as the sandbox's user, in its home, with its env vars.
func TestJSKernelInSandbox(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no node on this host")
	}
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1", "envVars": map[string]string{"STAGE": "js"}})
	cases := []struct{ lang, code, want string }{
		{"js", "[process.cwd(), process.env.STAGE, require('os').userInfo().username].join(' ')", `"text":"/home/user js user"`},
		{"ts", "const n: number = await Promise.resolve(2); n * 21", `"text":"42"`},
	}
	for _, c := range cases {
		out := executeIn(t, rt, sb, c.lang, c.code)
		if !strings.Contains(out, c.want) || strings.Contains(out, `"type":"error"`) {
			t.Errorf("%s %q: %s, want %s", c.lang, c.code, out, c.want)
		}
	}
}
