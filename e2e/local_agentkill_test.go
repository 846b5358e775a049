package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAgentKilledBySandboxUser: the sandbox's user kills its agent (with
// sudo) during an execute. That is the sandbox's own doing: the answer
// says what happened with a 4xx, not a 502, and the session's next
// execute gets a fresh sandbox.
func TestAgentKilledBySandboxUser(t *testing.T) {
	svc, alice := startLocalAlice(t)
	base := svc.URL + "/v1/sessions/agentkill"
	if code, r := call(t, "POST", base+"/execute", alice.Secret, `{"code":"1"}`); code != http.StatusOK {
		t.Fatalf("first execute: %d %v", code, r)
	}
	code, r := call(t, "POST", base+"/execute", alice.Secret, `{"code":"import subprocess\nsubprocess.run('sudo kill -9 $(pgrep -x agent)', shell=True)"}`)
	b, _ := json.Marshal(r)
	t.Logf("kill: %d %s", code, b)
	if code >= 500 || code == http.StatusOK && r["type"] != nil {
		t.Fatalf("the agent's death: %d %s", code, b)
	}
	if detail, _ := r["detail"].(string); code != http.StatusOK && !strings.Contains(detail, "killed") {
		t.Fatalf("the answer does not say the sandbox was killed: %s", b)
	}
	code, r = call(t, "POST", base+"/execute", alice.Secret, `{"code":"2"}`)
	if code != http.StatusOK || r["restarted"] != true {
		t.Fatalf("the next execute: %d %v", code, r)
	}
}
