// Package sandboxestest is the contract every session.Sandboxes must meet,
// as one test suite: what the Manager relies on of a sandbox provider
// (lifecycle, timeouts, execution and its state, files, commands, contexts
// and the errors it maps to). Run it against each implementation so they
// cannot drift apart: pkg/session runs it on the fake its Manager tests use
// (under -short too) and e2e runs it on pkg/sandboxes over the local
// runtime.
package sandboxestest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Env is the implementation under test.
type Env struct {
	Sandboxes session.Sandboxes
	// Template is the template every sandbox is created from.
	Template string
	// Code writes snippets in the language the sandboxes' kernels run.
	Code Code
	// Dir is an absolute directory, writable in every sandbox, that the
	// suite's files go under.
	Dir string
}

// Code writes the snippets the suite executes, in the kernel's language.
type Code struct {
	// Print prints text (letters and spaces) and a newline.
	Print func(text string) string
	// Raise raises an exception.
	Raise string
	// Set binds variable name to value (letters); Get prints it and a
	// newline, and raises when it is unbound.
	Set func(name, value string) string
	Get func(name string) string
	// Sleep runs for secs seconds.
	Sleep func(secs int) string
}

// Python is Code for Python kernels.
var Python = Code{
	Print: func(text string) string { return fmt.Sprintf("print(%q)", text) },
	Raise: `raise ValueError("boom")`,
	Set:   func(name, value string) string { return fmt.Sprintf("%s = %q", name, value) },
	Get:   func(name string) string { return fmt.Sprintf("print(%s)", name) },
	Sleep: func(secs int) string { return fmt.Sprintf("import time\ntime.sleep(%d)", secs) },
}

// Run runs the whole contract against env. The tests run one after
// another: a real provider's sandboxes are not free.
func Run(t *testing.T, env Env) {
	tests := []struct {
		name string
		fn   func(*testing.T, Env)
	}{
		{"Lifecycle", testLifecycle},
		{"PauseAndConnect", testPauseAndConnect},
		{"Gone", testGone},
		{"Execute", testExecute},
		{"ExecuteState", testExecuteState},
		{"ExecuteTimeout", testExecuteTimeout},
		{"Files", testFiles},
		{"FilesNotFound", testFilesNotFound},
		{"Commands", testCommands},
		{"CommandTimeout", testCommandTimeout},
		{"BackgroundCommands", testBackgroundCommands},
		{"Contexts", testContexts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, env) })
	}
}

var runSeq atomic.Int64

// newSandbox creates a sandbox tagged with metadata unique to this test,
// killed when the test ends.
func newSandbox(t *testing.T, env Env) (session.SandboxInfo, map[string]string) {
	t.Helper()
	md := map[string]string{"contract": fmt.Sprintf("%s-%d-%d", t.Name(), time.Now().UnixNano(), runSeq.Add(1))}
	info, err := env.Sandboxes.Create(t.Context(), session.SandboxSpec{Template: env.Template, Timeout: 5 * time.Minute, Metadata: md})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is done by the time cleanups run.
		ctx := context.WithoutCancel(t.Context())
		if err := env.Sandboxes.Kill(ctx, info.ID); err != nil {
			t.Errorf("Kill(%s) at cleanup: %v", info.ID, err)
		}
	})
	return info, md
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
