package e2e

import (
	"testing"

	"github.com/sessionbox/sessionbox/pkg/sandboxes/sandboxestest"
)

// TestSandboxesContract holds pkg/sandboxes over the local runtime to the
// contract the Manager relies on, the same suite pkg/session runs on its
// fake provider.
func TestSandboxesContract(t *testing.T) {
	rt := runtime(t)
	sandboxestest.Run(t, sandboxestest.Env{
		Sandboxes: adapter(t, rt.APIURL(), rt.SandboxURL()),
		Template:  "code-interpreter-v1",
		Code:      sandboxestest.Python,
		Dir:       "/home/user/contract",
	})
}
