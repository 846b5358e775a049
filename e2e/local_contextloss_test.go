package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestContextReplacedBehindTheSession: another caller of the sandbox's
// interpreter restarting or deleting the session's default context makes
// its state vanish; the session's next execute says kernelRestarted (the
// sandbox is the same), and the one after does not.
func TestContextReplacedBehindTheSession(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	// The test holds the runtime's key as a second caller of the sandbox.
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice},
		Runtime: e2blocal.Config{APIKey: testE2BKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	client, err := e2b.New(e2b.Config{APIKey: testE2BKey, APIURL: svc.Runtime.APIURL(), SandboxURL: svc.Runtime.SandboxURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cases := []struct {
		name    string
		replace func(ctx context.Context, sb *e2b.Sandbox, id string) error
	}{
		{"restart", func(ctx context.Context, sb *e2b.Sandbox, id string) error { return sb.RestartContext(ctx, id) }},
		{"delete", func(ctx context.Context, sb *e2b.Sandbox, id string) error { return sb.RemoveContext(ctx, id) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := svc.URL + "/v1/sessions/ctx-" + c.name
			if code, r := call(t, "POST", base+"/execute", alice.Secret, `{"code":"x = 1"}`); code != http.StatusOK || r["kernelRestarted"] != false {
				t.Fatalf("first execute: %d %v", code, r)
			}
			code, view := call(t, "GET", base+"/sandbox", alice.Secret, "")
			sandboxID, _ := view["sandboxId"].(string)
			if code != http.StatusOK || sandboxID == "" {
				t.Fatalf("sandbox of the session: %d %v", code, view)
			}
			ctx := t.Context()
			sb, err := client.Connect(ctx, sandboxID, e2b.ConnectParams{})
			if err != nil {
				t.Fatal(err)
			}
			contexts, err := sb.ListContexts(ctx)
			if err != nil || len(contexts) == 0 {
				t.Fatalf("contexts of %s: %v %v", sandboxID, contexts, err)
			}
			for _, k := range contexts {
				if err := c.replace(ctx, sb, k.ID); err != nil {
					t.Fatalf("%s context %s: %v", c.name, k.ID, err)
				}
			}
			code, second := call(t, "POST", base+"/execute", alice.Secret, `{"code":"'x' in globals()"}`)
			b, _ := json.Marshal(second)
			if code != http.StatusOK || second["kernelRestarted"] != true || second["restarted"] != false {
				t.Fatalf("execute after the %s: %d %s", c.name, code, b)
			}
			if results, _ := second["results"].([]any); len(results) != 1 || results[0].(map[string]any)["text"] != "False" {
				t.Fatalf("the state survived: %s", b)
			}
			if code, third := call(t, "POST", base+"/execute", alice.Secret, `{"code":"1"}`); code != http.StatusOK || third["kernelRestarted"] != false {
				t.Fatalf("reported again: %d %v", code, third)
			}
		})
	}
}
