package e2e

import (
	"os"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// TestMain lets the local runtime re-execute this test binary as the
// in-sandbox agent; under -short it runs nothing, since every test here
// starts real sandboxes. What tests share is closed once all have run.
func TestMain(m *testing.M) {
	e2blocal.RunAgentIfRequested()
	code := e2btest.MainUnlessShort(m)
	exitMu.Lock()
	defer exitMu.Unlock()
	for i := len(exiting) - 1; i >= 0; i-- {
		exiting[i]()
	}
	os.Exit(code)
}

var (
	exitMu  sync.Mutex
	exiting []func()
)

// atExit runs f after every test, for a fixture tests share (a runtime
// started once): t.Cleanup would end it with the test that started it.
func atExit(f func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	exiting = append(exiting, f)
}
