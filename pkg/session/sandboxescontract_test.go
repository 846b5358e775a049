package session_test

import (
	"fmt"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/sandboxes/sandboxestest"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// fakeCode is the fake provider's language (see fakeSandboxes.interpret).
var fakeCode = sandboxestest.Code{
	Print: func(text string) string { return "print " + text },
	Raise: "fail",
	Set:   func(name, value string) string { return "set " + name + " " + value },
	Get:   func(name string) string { return "get " + name },
	Sleep: func(secs int) string { return fmt.Sprintf("sleep %d", secs) },
}

// TestFakeSandboxesContract holds the Manager tests' fake provider to the
// contract pkg/sandboxes meets over the local runtime (e2e's
// TestSandboxesContract), so a Manager test cannot pass on behaviour no
// real provider has.
func TestFakeSandboxesContract(t *testing.T) {
	t.Parallel()
	sandboxestest.Run(t, sandboxestest.Env{
		Sandboxes: session.NewFakeSandboxes(session.NewFakeClock()),
		Template:  "code-interpreter-v1",
		Code:      fakeCode,
		Dir:       "/home/user/contract",
	})
}
