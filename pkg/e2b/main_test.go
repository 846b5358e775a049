package e2b_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// testAPIKey is the only key the local runtime accepts in these tests.
const testAPIKey = "e2b_00112233445566778899aabbccddeeff"

// local is the in-process E2B runtime every integration test, benchmark and
// example talks to. Examples find it through the E2B_* variables, exactly
// as a user's program would.
var local *e2blocal.Runtime

func TestMain(m *testing.M) {
	e2blocal.RunAgentIfRequested()
	os.Exit(run(m))
}

func run(m *testing.M) int {
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
	for k, v := range map[string]string{"E2B_API_KEY": testAPIKey, "E2B_API_URL": local.APIURL(),
		"E2B_SANDBOX_URL": local.SandboxURL(), "E2B_DEBUG": ""} {
		os.Setenv(k, v)
	}
	return m.Run()
}
