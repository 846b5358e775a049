package e2b_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// testAPIKey is the only key the local runtime accepts in these tests.
const testAPIKey = "e2b_00112233445566778899aabbccddeeff"

// local is the in-process E2B runtime every integration test, benchmark and
// example talks to, unless e2btest.Env points them at real E2B; then it is
// nil. Examples find their E2B through the E2B_* variables, exactly as a
// user's program would.
var local *e2blocal.Runtime

// target is the configuration of the E2B the integration tests use.
var target e2b.Config

func TestMain(m *testing.M) {
	e2blocal.RunAgentIfRequested()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if e2btest.SkipExamplesIfShort() {
		// No runtime: the integration tests skip, and the examples, which
		// print what a sandbox answered, do not run.
		return m.Run()
	}
	cloud, ok, err := e2btest.Cloud()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if ok {
		target = cloud
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "e2b-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	local, err = e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: dir, APIKey: testAPIKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local E2B runtime:", err)
		return 1
	}
	defer local.Close()
	target = e2b.Config{APIKey: testAPIKey, APIURL: local.APIURL(), SandboxURL: local.SandboxURL()}
	for k, v := range map[string]string{"E2B_API_KEY": testAPIKey, "E2B_API_URL": local.APIURL(),
		"E2B_SANDBOX_URL": local.SandboxURL(), "E2B_DEBUG": ""} {
		os.Setenv(k, v)
	}
	return m.Run()
}
