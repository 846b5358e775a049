package e2b_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// oldAPIDifferences are all that may change when the differential scenario
// runs against a runtime serving an older E2B's control plane: the create
// and connect go to the endpoints that deployment has (after one 404 each
// from v2), and the v1 create asks for the secured sandbox v2 gives
// without asking. Every sandbox request stays the same.
var oldAPIDifferences = map[string][]string{
	e2blocal.OldAPIV1: {
		"POST /sandboxes | request", "POST /sandboxes/{sandboxID}/connect | request",
	},
	e2blocal.OldAPIResume: {
		"POST /sandboxes | request", "POST /sandboxes/{sandboxID}/connect | request",
		"POST /sandboxes/{sandboxID}/resume | request",
	},
}

// TestDifferentialOldAPI runs the differential scenario through this
// client against the current runtime and against ones serving older E2B
// control planes (e2blocal.Config.OldAPI), and compares the requests: the
// client falls back to the endpoints each has, and nothing else changes.
// (The JS SDK side of TestDifferentialJSSDK knows only the newest API.)
func TestDifferentialOldAPI(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	e2btest.LocalOnly(t, "older control planes are the local runtime's OldAPI")
	rec := &recorder{}
	record := func(side, apiURL, sandboxURL string) []recorded {
		apiProxy := httptest.NewServer(rec.proxy(apiURL))
		defer apiProxy.Close()
		sbxProxy := httptest.NewServer(rec.proxy(sandboxURL))
		defer sbxProxy.Close()
		rec.begin(side)
		goScenario(t, apiProxy.URL, sbxProxy.URL)
		rec.begin("")
		return rec.side(side)
	}
	current := record("current", local.APIURL(), local.SandboxURL())
	for _, old := range []string{e2blocal.OldAPIV1, e2blocal.OldAPIResume} {
		t.Run(old, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0",
				DataDir: t.TempDir(), APIKey: testAPIKey, OldAPI: old, Agent: e2btest.Agent()})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			diffs, table := compareSides(current, record(old, rt.APIURL(), rt.SandboxURL()))
			t.Logf("operation | requests (current, %s) | differences\n%s", old, table)
			for _, d := range diffs {
				key := d.request + " | " + d.field
				if _, ok := deliberate[key]; ok || slices.Contains(oldAPIDifferences[old], key) {
					continue
				}
				t.Errorf("%s | %s: current API %s, old API %s", d.step, key, d.js, d.goV)
			}
		})
	}
}
