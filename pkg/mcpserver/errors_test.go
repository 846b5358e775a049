package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestDescribeSameLocalAndRemote: a failure reads the same to a model
// whether the Manager raised it in process or the API sent it to the Go
// client (`sessionbox mcp`): one path, no table of statuses.
func TestDescribeSameLocalAndRemote(t *testing.T) {
	t.Parallel()
	for _, k := range problem.Kinds {
		t.Run(k.Slug, func(t *testing.T) {
			t.Parallel()
			local := fmt.Errorf("call: %w", session.Errorf(k.Err, "what went wrong"))
			remote := fmt.Errorf("call: %w", &client.Problem{Type: k.Type(), Title: k.Title, Status: k.Status, Detail: "what went wrong"})
			lmsg, lok := describe(local)
			rmsg, rok := describe(remote)
			if lmsg != rmsg || lok != rok {
				t.Fatalf("local %q (%v), remote %q (%v)", lmsg, lok, rmsg, rok)
			}
			if k.Err != session.ErrTimeout && !strings.HasPrefix(lmsg, "what went wrong") {
				t.Errorf("message %q does not start with the detail", lmsg)
			}
		})
	}
}
