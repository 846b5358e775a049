package e2e

import (
	"os"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// TestMain lets the local runtime re-execute this test binary as the
// in-sandbox agent; under -short it runs nothing, since every test here
// starts real sandboxes.
func TestMain(m *testing.M) {
	e2blocal.RunAgentIfRequested()
	os.Exit(e2btest.MainUnlessShort(m))
}
