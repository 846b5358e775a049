// Package e2btest points integration tests at an E2B: the local runtime
// (pkg/e2blocal) by default, or real E2B when SESSIONBOX_TEST_E2B=cloud, so
// one set of tests checks the production client against both. `make
// test-cloud` sets it when E2B_API_KEY is present.
package e2btest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
)

// Env is the variable that chooses the target: unset or "local" for the
// local runtime, "cloud" for real E2B.
const Env = "SESSIONBOX_TEST_E2B"

// Cloud returns real E2B's configuration and true when the tests target
// it: the key from E2B_API_KEY (required then), and E2B_DOMAIN, E2B_API_URL
// and E2B_SANDBOX_URL when set (a self-hosted E2B). It fails on an unknown target or a missing key,
// rather than quietly testing the local runtime instead.
func Cloud() (e2b.Config, bool, error) {
	switch target := os.Getenv(Env); target {
	case "", "local":
		return e2b.Config{}, false, nil
	case "cloud":
		cfg := e2b.Config{APIKey: os.Getenv("E2B_API_KEY"), Domain: os.Getenv("E2B_DOMAIN"), APIURL: os.Getenv("E2B_API_URL"),
			SandboxURL: os.Getenv("E2B_SANDBOX_URL")}
		if cfg.APIKey == "" {
			return e2b.Config{}, false, errors.New(Env + "=cloud needs E2B_API_KEY")
		}
		return cfg, true, nil
	default:
		return e2b.Config{}, false, fmt.Errorf("%s=%q: want local or cloud", Env, target)
	}
}

// IsCloud reports whether tests target real E2B; a misconfigured target
// counts as local here, and Cloud reports it.
func IsCloud() bool {
	_, ok, _ := Cloud()
	return ok
}

// LocalOnly skips t when the tests target real E2B: what it checks is a
// property of the local runtime, not of E2B (why says which).
func LocalOnly(t testing.TB, why string) {
	t.Helper()
	if IsCloud() {
		t.Skip("local runtime only: " + why)
	}
}

// Config returns real E2B's configuration when the tests target it, and
// otherwise local, the configuration of a runtime the caller started. A
// misconfigured target fails the test.
func Config(t testing.TB, local func() e2b.Config) e2b.Config {
	t.Helper()
	cfg, ok, err := Cloud()
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		return cfg
	}
	return local()
}

// StackID is a stack id of the test's own, so sandboxes it starts on a
// shared E2B account are told apart from everyone else's.
func StackID(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(b[:])
}

// KillTaggedAtCleanup kills, when t ends, every sandbox of cfg's E2B whose
// metadata holds all of tags: on a shared E2B, nothing kills them when the
// test's service goes away.
func KillTaggedAtCleanup(t testing.TB, cfg e2b.Config, tags map[string]string) {
	t.Helper()
	t.Cleanup(func() {
		c, err := e2b.New(cfg)
		if err != nil {
			t.Errorf("kill the test's sandboxes: %v", err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for sb, err := range c.List(ctx, e2b.ListParams{Metadata: tags}) {
			if err != nil {
				t.Errorf("list the test's sandboxes: %v", err)
				return
			}
			if err := c.Kill(ctx, sb.SandboxID); err != nil && !errors.Is(err, e2b.ErrSandboxNotFound) {
				t.Errorf("kill sandbox %s: %v", sb.SandboxID, err)
			}
		}
	})
}

// shortReason says why a test that starts sandboxes does not run under
// -short: `go test -short ./...` is the fast loop of tests on fakes and
// emulators, and `make test` runs everything.
const shortReason = "starts real sandboxes or their kernels (seconds each); skipped under -short, run by `make test`"

// NeedsSandboxes skips t under -short, because it starts real sandboxes
// (or the kernel that runs in one). The runtime's own packages call it
// from the helpers that start them.
func NeedsSandboxes(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip(shortReason)
	}
}

// Agent is the dedicated agent executable (a build of cmd/sessionbox-agent)
// that SESSIONBOX_TEST_AGENT names for the local runtimes tests start, as
// `sessionbox serve --agent` does; "" when unset, and those runtimes
// re-execute the test binary. Benchmarks use it to compare the two. It is
// not serve's SESSIONBOX_AGENT, so an agent exported for serve never runs
// the tests of newer sources.
func Agent() string { return os.Getenv("SESSIONBOX_TEST_AGENT") }

// MainUnlessShort runs m's tests and returns the exit code, or runs none
// under -short and says why: for a TestMain whose every test starts
// sandboxes (the e2e package).
func MainUnlessShort(m *testing.M) int {
	if short() {
		fmt.Println("every test here " + shortReason)
		return 0
	}
	return m.Run()
}

// SkipExamplesIfShort reports whether the tests run under -short, and then
// adds the package's examples to -skip: an example cannot skip itself, and
// those that print what a sandbox answered have no sandbox then. A TestMain
// calls it before m.Run and starts no runtime when it returns true.
func SkipExamplesIfShort() bool {
	if !short() {
		return false
	}
	skip := "^Example"
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		skip = f.Value.String() + "|" + skip
	}
	if err := flag.Set("test.skip", skip); err != nil {
		panic("e2btest: set -test.skip: " + err.Error())
	}
	return true
}

// short reports testing.Short() from a TestMain, where the flags may not be
// parsed yet.
func short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}
