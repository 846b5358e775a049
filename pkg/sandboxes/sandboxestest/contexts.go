package sandboxestest

import (
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// testContexts: a context is a kernel of its own beside the default one; a
// restart clears it, and once removed (or never made) it is ErrNotFound.
func testContexts(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	c, err := sb.CreateContext(ctx, info.ID, session.ContextRequest{Language: "python"})
	if err != nil || c.ID == "" || c.Language != "python" {
		t.Fatalf("CreateContext: %+v, %v", c, err)
	}
	mustExecIn(t, env, info.ID, c.ID, env.Code.Set("mine", "ctx"))
	if res := mustExecIn(t, env, info.ID, c.ID, env.Code.Get("mine")); res.Stdout != "ctx\n" {
		t.Fatalf("the context printed %q, want %q", res.Stdout, "ctx\n")
	}
	res, err := sb.Execute(ctx, info.ID, session.ExecRequest{Code: env.Code.Get("mine")}, nil)
	if err != nil || res.Success {
		t.Fatalf("the default context sees the other context's variable: %+v, %v", res, err)
	}
	must(t, "RestartContext", sb.RestartContext(ctx, info.ID, c.ID))
	res, err = sb.Execute(ctx, info.ID, session.ExecRequest{Code: env.Code.Get("mine"), Context: c.ID}, nil)
	if err != nil || res.Success {
		t.Fatalf("after a restart the context kept its variable: %+v, %v", res, err)
	}
	must(t, "RemoveContext", sb.RemoveContext(ctx, info.ID, c.ID))
	wantErr(t, "RestartContext of a removed context", sb.RestartContext(ctx, info.ID, c.ID), session.ErrNotFound)
	wantErr(t, "RemoveContext of a removed context", sb.RemoveContext(ctx, info.ID, c.ID), session.ErrNotFound)
	_, err = sb.Execute(ctx, info.ID, session.ExecRequest{Code: env.Code.Print("x"), Context: c.ID}, nil)
	wantErr(t, "Execute in a removed context", err, session.ErrNotFound)
}
