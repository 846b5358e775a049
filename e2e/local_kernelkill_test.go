package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// TestKernelKilledBetweenExecutes: a kernel killed inside the sandbox
// between two executes (not by the service) is replaced for the second,
// whose result says kernelRestarted though the sandbox is the same.
func TestKernelKilledBetweenExecutes(t *testing.T) {
	svc, alice := startLocalAlice(t)
	base := svc.URL + "/v1/sessions/k1"
	// The cell arranges its kernel's death after it has answered, and a
	// marker once the kernel is gone.
	code, first := call(t, "POST", base+"/execute", alice.Secret, `{"code":"import os, subprocess\nx = 1\nsubprocess.Popen(['sh', '-c', 'sleep 0.2; kill -9 %d; while kill -0 %d 2>/dev/null; do sleep 0.02; done; touch /home/user/.killed' % (os.getpid(), os.getpid())], start_new_session=True)\n'armed'"}`)
	if code != http.StatusOK || first["success"] != true || first["kernelRestarted"] != false {
		t.Fatalf("first execute: %d %v", code, first)
	}
	testwait.Until(t, 20*time.Second, func() error {
		if code, _ := call(t, "GET", base+"/files/content?path=.killed", alice.Secret, ""); code != http.StatusOK {
			return fmt.Errorf("the kernel was not killed: marker %d", code)
		}
		return nil
	})
	code, second := call(t, "POST", base+"/execute", alice.Secret, `{"code":"'x' in globals()"}`)
	b, _ := json.Marshal(second)
	if code != http.StatusOK || second["kernelRestarted"] != true || second["restarted"] != false {
		t.Fatalf("execute after the kill: %d %s", code, b)
	}
	if results, _ := second["results"].([]any); len(results) != 1 || results[0].(map[string]any)["text"] != "False" {
		t.Fatalf("the kernel kept its state: %s", b)
	}
	code, third := call(t, "POST", base+"/execute", alice.Secret, `{"code":"1"}`)
	if code != http.StatusOK || third["kernelRestarted"] != false {
		t.Fatalf("the restart is reported again: %d %v", code, third)
	}
}
