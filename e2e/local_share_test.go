package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestPrincipalShareEndToEnd: through the API, a principal past its share
// of the tenant's cap, while another principal has sandboxes, gets 429 with
// Retry-After and a problem naming the share; the other principal still
// starts one.
func TestPrincipalShareEndToEnd(t *testing.T) {
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := local.NewKey("bob")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice, bob},
		Session: session.Config{MaxLiveSandboxesPerTenant: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	steps := []struct {
		key, session string
		want         int
	}{
		{bob.Secret, "b1", http.StatusOK},
		{alice.Secret, "a1", http.StatusOK},
		{alice.Secret, "a2", http.StatusOK},
		{alice.Secret, "a3", http.StatusTooManyRequests}, // her share is 2 of 4
		{bob.Secret, "b2", http.StatusOK},
	}
	for _, s := range steps {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", svc.URL+"/v1/sessions/"+s.session+"/execute", strings.NewReader(`{"code":"1"}`))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Fatalf("execute in %s = %d, want %d", s.session, resp.StatusCode, s.want)
		}
		if s.want == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("429 without Retry-After or problem+json: %v", resp.Header)
			}
			if !strings.Contains(string(body), "your share of the tenant's 4") {
				t.Fatalf("problem does not name the share: %s", body)
			}
		}
	}
}
