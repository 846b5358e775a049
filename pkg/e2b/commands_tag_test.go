package e2b_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
)

// TestLocalTagSelectors: a process started with a tag is found, reattached
// to and killed by that tag; List reports the tag; an unknown tag is
// ErrNotFound to Connect and false to Kill.
func TestLocalTagSelectors(t *testing.T) {
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	cmds := sb.Commands()
	h, err := cmds.Start(ctx, "echo first; read _; echo second", e2b.CommandOptions{Tag: "job-1", Stdin: true, Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	h.Disconnect()
	procs, err := cmds.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range procs {
		found = found || (p.Tag == "job-1" && p.PID == h.PID)
	}
	if !found {
		t.Fatalf("list %+v lacks tag job-1 (pid %d)", procs, h.PID)
	}

	// Reattached by tag, it gets what it prints from then on.
	h2, err := cmds.ConnectTag(ctx, "job-1", e2b.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmds.SendStdin(ctx, h.PID, []byte("go\n")); err != nil {
		t.Fatal(err)
	}
	res, err := h2.Wait(ctx)
	if err != nil || !strings.Contains(res.Stdout, "second") {
		t.Fatalf("reattached result %+v, %v", res, err)
	}

	// Killed by tag.
	h3, err := cmds.Start(ctx, "sleep 600", e2b.CommandOptions{Tag: "job-2", Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := cmds.KillTag(ctx, "job-2"); !ok || err != nil {
		t.Fatalf("kill by tag = %v, %v", ok, err)
	}
	if res, err := h3.Wait(ctx); res == nil || res.ExitCode == 0 {
		t.Fatalf("killed process ended %+v, %v", res, err)
	}
	if ok, err := cmds.KillTag(ctx, "job-2"); ok || err != nil {
		t.Errorf("second kill by tag = %v, %v; want false, nil", ok, err)
	}
	if _, err := cmds.ConnectTag(ctx, "no-such-tag", e2b.ConnectOptions{}); !errors.Is(err, e2b.ErrNotFound) {
		t.Errorf("connect unknown tag: %v", err)
	}
}

// TestLocalStartDetachedKeepsFirstOutput: a command started detached that
// prints at once and ends still gives its first Connect all its output,
// each line once. A Start and Disconnect loses what was streamed before
// the disconnect (E2B's semantics), which is what StartDetached avoids.
func TestLocalStartDetachedKeepsFirstOutput(t *testing.T) {
	if local == nil {
		t.Skip("E2B's envd keeps no output for a later Connect")
	}
	c := newClient(t)
	sb := newSandbox(t, c, e2b.CreateParams{})
	ctx := testCtx(t)
	cmds := sb.Commands()
	for i := range 5 {
		tag := fmt.Sprintf("detached-%d", i)
		pid, err := cmds.StartDetached(ctx, "echo first; echo second >&2; echo third", e2b.CommandOptions{Tag: tag, Timeout: -1})
		if err != nil || pid == 0 {
			t.Fatalf("StartDetached = %d, %v", pid, err)
		}
		h, err := cmds.ConnectTag(ctx, tag, e2b.ConnectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Wait(ctx)
		if err != nil || res.Stdout != "first\nthird\n" || res.Stderr != "second\n" {
			t.Fatalf("run %d: connect got %+v, %v; want every line once", i, res, err)
		}
	}
}
