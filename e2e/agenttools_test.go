package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/agenttools"
	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestAgentTools drives the Go seed tools over pkg/client against the
// API, as a Go agent framework would.
func TestAgentTools(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	kit, err := agenttools.New(ctx, client.New(s.url, s.alice, s.client), "agent-go")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	exec := kit.Tools()[0]
	if exec.Name != "execute_python" {
		t.Fatalf("first tool %s", exec.Name)
	}
	for _, step := range []struct {
		code    string
		want    string
		isError bool
	}{
		{"v = 5\nprint('set')", "set", false},
		{"v * 2", "10", false},
		{"v / 0", "ZeroDivisionError", true},
	} {
		args, _ := json.Marshal(map[string]string{"code": step.code})
		res, err := exec.Call(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != step.isError || !strings.Contains(res.Text, step.want) {
			t.Fatalf("%q: %+v", step.code, res)
		}
	}
	// The REST API sees the same session.
	var st struct{ State string }
	s.json(s.alice, "GET", "/v1/sessions/agent-go/sandbox", nil, &st)
	if st.State != "running" {
		t.Fatalf("session state %q", st.State)
	}
}
