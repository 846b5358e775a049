package sandboxestest

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// testLifecycle: a created sandbox runs, carries its metadata, is found by
// it (and by no other), takes new timeouts, and is gone once killed;
// killing it again is no error.
func testLifecycle(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, md := newSandbox(t, env)
	if info.ID == "" || info.State != session.StateRunning || info.Template != env.Template || !maps.Equal(info.Metadata, md) {
		t.Fatalf("Create returned %+v, want a running %s sandbox with metadata %v", info, env.Template, md)
	}
	got, err := sb.Get(ctx, info.ID)
	if err != nil || got.ID != info.ID || got.State != session.StateRunning || !maps.Equal(got.Metadata, md) {
		t.Fatalf("Get: %+v, %v; want it running with metadata %v", got, err, md)
	}
	listed, err := sb.List(ctx, md)
	if err != nil || len(listed) != 1 || listed[0].ID != info.ID {
		t.Fatalf("List by its metadata: %+v, %v; want just %s", listed, err, info.ID)
	}
	none, err := sb.List(ctx, map[string]string{"contract": md["contract"] + "-other"})
	if err != nil || len(none) != 0 {
		t.Fatalf("List by other metadata: %+v, %v; want none", none, err)
	}
	must(t, "SetTimeout", sb.SetTimeout(ctx, info.ID, 10*time.Minute))

	must(t, "Kill", sb.Kill(ctx, info.ID))
	_, err = sb.Get(ctx, info.ID)
	wantErr(t, "Get after Kill", err, session.ErrSandboxGone)
	must(t, "Kill of a killed sandbox", sb.Kill(ctx, info.ID))
	if listed, err := sb.List(ctx, md); err != nil || len(listed) != 0 {
		t.Fatalf("List after Kill: %+v, %v; want none", listed, err)
	}
}

// testPauseAndConnect: a paused sandbox says so, pausing it again is no
// error, and Connect resumes it with its kernel's state and files.
func testPauseAndConnect(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	mustExec(t, env, info.ID, env.Code.Set("kept", "seven"))
	must(t, "Pause", sb.Pause(ctx, info.ID))
	must(t, "second Pause", sb.Pause(ctx, info.ID))
	if got, err := sb.Get(ctx, info.ID); err != nil || got.State != session.StatePaused {
		t.Fatalf("Get after Pause: %+v, %v; want paused", got, err)
	}
	got, err := sb.Connect(ctx, info.ID, 5*time.Minute)
	if err != nil || got.ID != info.ID || got.State != session.StateRunning {
		t.Fatalf("Connect: %+v, %v; want it running", got, err)
	}
	if res := mustExec(t, env, info.ID, env.Code.Get("kept")); res.Stdout != "seven\n" {
		t.Fatalf("after resuming, the kernel printed %q, want %q", res.Stdout, "seven\n")
	}
}

// testGone: every call on a sandbox that no longer exists is
// ErrSandboxGone, the error on which the Manager replaces a sandbox.
func testGone(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	must(t, "Kill", sb.Kill(ctx, info.ID))
	id := info.ID
	calls := map[string]func() error{
		"Get":        func() error { _, err := sb.Get(ctx, id); return err },
		"Connect":    func() error { _, err := sb.Connect(ctx, id, time.Minute); return err },
		"SetTimeout": func() error { return sb.SetTimeout(ctx, id, time.Minute) },
		"Execute": func() error {
			_, err := sb.Execute(ctx, id, session.ExecRequest{Code: env.Code.Print("x")}, nil)
			return err
		},
		"RunShell": func() error {
			_, err := sb.RunShell(ctx, id, session.ShellCommand{Cmd: "echo x", Tag: "t", Timeout: time.Minute}, func(session.Event) {})
			return err
		},
		"StartShell": func() error {
			_, err := sb.StartShell(ctx, id, session.ShellCommand{Cmd: "echo x", Tag: "t"})
			return err
		},
		"CreateContext": func() error {
			_, err := sb.CreateContext(ctx, id, session.ContextRequest{Language: "python"})
			return err
		},
		"ListFiles": func() error { _, err := sb.ListFiles(ctx, id, env.Dir, 1); return err },
		"ReadFile":  func() error { _, err := sb.ReadFile(ctx, id, env.Dir+"/x"); return err },
		"WriteFile": func() error { return sb.WriteFile(ctx, id, env.Dir+"/x", strings.NewReader("x")) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { wantErr(t, name+" on a killed sandbox", call(), session.ErrSandboxGone) })
	}
}
