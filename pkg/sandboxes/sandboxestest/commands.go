package sandboxestest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// testCommands: the service's own commands and callers' foreground ones
// run in a shell and return their output; RunShell says Started before any
// output.
func testCommands(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	out, err := sb.RunCommand(ctx, info.ID, "echo from the service", time.Minute, nil)
	if err != nil || out.ExitCode != 0 || out.Stdout != "from the service\n" {
		t.Fatalf("RunCommand: %+v, %v", out, err)
	}

	var mu sync.Mutex
	var events []session.Event
	res, err := sb.RunShell(ctx, info.ID, session.ShellCommand{Cmd: "echo hello", Tag: "fg-1", Timeout: time.Minute}, func(e session.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})
	if err != nil || res.ExitCode != 0 || res.Stdout != "hello\n" || res.TimedOut {
		t.Fatalf("RunShell: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 2 || !events[0].Started || events[0].Stdout != "" {
		t.Fatalf("events %+v, want Started first, then the output", events)
	}
	var live string
	for _, e := range events[1:] {
		live += e.Stdout
	}
	if live != "hello\n" {
		t.Fatalf("live output %q, want %q", live, "hello\n")
	}
}

// testCommandTimeout: a foreground command past its timeout is killed and
// the result says TimedOut.
func testCommandTimeout(t *testing.T, env Env) {
	info, _ := newSandbox(t, env)
	c := session.ShellCommand{Cmd: "sleep 60", Tag: "fg-slow", Timeout: 500 * time.Millisecond}
	res, err := env.Sandboxes.RunShell(t.Context(), info.ID, c, func(session.Event) {})
	if err != nil || !res.TimedOut {
		t.Fatalf("RunShell past its timeout: %+v, %v; want TimedOut", res, err)
	}
}

// shellTags lists the tags of the sandbox's running processes.
func shellTags(t *testing.T, env Env, id string) []string {
	t.Helper()
	procs, err := env.Sandboxes.ListShells(t.Context(), id)
	if err != nil {
		t.Fatalf("ListShells: %v", err)
	}
	var tags []string
	for _, p := range procs {
		tags = append(tags, p.Tag)
	}
	return tags
}

// testBackgroundCommands: a started command is listed by its tag until
// killed; killing or attaching to a tag no process has is ErrNotFound.
func testBackgroundCommands(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	pid, err := sb.StartShell(ctx, info.ID, session.ShellCommand{Cmd: "sleep 60", Tag: "bg-1"})
	if err != nil || pid == 0 {
		t.Fatalf("StartShell: pid %d, %v", pid, err)
	}
	procs, err := sb.ListShells(ctx, info.ID)
	if err != nil || !slices.ContainsFunc(procs, func(p session.ShellProcess) bool { return p.Tag == "bg-1" && p.PID == pid }) {
		t.Fatalf("ListShells: %+v, %v; want bg-1 with pid %d", procs, err, pid)
	}
	must(t, "KillShell", sb.KillShell(ctx, info.ID, "bg-1"))
	// A real provider lists a killed process until it has reaped it.
	testwait.Until(t, 10*time.Second, func() error {
		if tags := shellTags(t, env, info.ID); slices.Contains(tags, "bg-1") {
			return fmt.Errorf("the killed process is still listed: %v", tags)
		}
		return nil
	})
	wantErr(t, "KillShell of an unknown tag", sb.KillShell(ctx, info.ID, "no-such-tag"), session.ErrNotFound)
	_, err = sb.ReadShell(ctx, info.ID, "no-such-tag", session.ShellReadRequest{MaxBytes: 1 << 10})
	wantErr(t, "ReadShell of an unknown tag", err, session.ErrNotFound)
	// The killed command's read says a signal ended it.
	testwait.Until(t, 10*time.Second, func() error {
		r, err := sb.ReadShell(ctx, info.ID, "bg-1", session.ShellReadRequest{MaxBytes: 1 << 10})
		if err != nil || r.Running || r.ExitCode != -1 {
			return fmt.Errorf("read of the killed command: %+v, %v; want ended with -1", r, err)
		}
		return nil
	})
	testBackgroundFirstOutput(t, env, info.ID)
	testBackgroundBoundedRead(t, env, info.ID)
}

// testBackgroundFirstOutput: what a started command prints at once is
// kept for the first ReadShell, which gets it once with the exit code; a
// later read gets nothing new. Repeated, since a stream dropped after the
// start once lost it when the command printed fast enough.
func testBackgroundFirstOutput(t *testing.T, env Env, id string) {
	sb, ctx := env.Sandboxes, t.Context()
	for i := range 10 {
		tag := fmt.Sprintf("bg-first-%d", i)
		if _, err := sb.StartShell(ctx, id, session.ShellCommand{Cmd: "echo first-line", Tag: tag}); err != nil {
			t.Fatalf("StartShell %s: %v", tag, err)
		}
		r, err := sb.ReadShell(ctx, id, tag, session.ShellReadRequest{Wait: 30 * time.Second, MaxBytes: 1 << 10})
		if err != nil || r.Stdout != "first-line\n" || r.Running || r.ExitCode != 0 || r.More {
			t.Fatalf("ReadShell %s: %+v, %v; want first-line and exit code 0", tag, r, err)
		}
		if r.Dir == "" || r.StdoutBytes != int64(len("first-line\n")) {
			t.Fatalf("ReadShell %s: files %q of %d bytes; want the output's directory and size", tag, r.Dir, r.StdoutBytes)
		}
		r, err = sb.ReadShell(ctx, id, tag, session.ShellReadRequest{MaxBytes: 1 << 10})
		if err != nil || r.Stdout != "" || r.Stderr != "" || r.Running || r.ExitCode != 0 {
			t.Fatalf("second ReadShell %s: %+v, %v; want nothing new", tag, r, err)
		}
	}
}

// testBackgroundBoundedRead: a read returns at most MaxBytes of a stream,
// says more waits, and the next read goes on where it stopped.
func testBackgroundBoundedRead(t *testing.T, env Env, id string) {
	sb, ctx := env.Sandboxes, t.Context()
	long := strings.Repeat("abcdefghij", 50)
	if _, err := sb.StartShell(ctx, id, session.ShellCommand{Cmd: "echo " + long, Tag: "bg-long"}); err != nil {
		t.Fatalf("StartShell: %v", err)
	}
	var got strings.Builder
	testwait.Until(t, 30*time.Second, func() error {
		r, err := sb.ReadShell(ctx, id, "bg-long", session.ShellReadRequest{Wait: time.Second, MaxBytes: 100})
		if err != nil {
			t.Fatalf("ReadShell: %v", err)
		}
		if len(r.Stdout) > 100 {
			t.Fatalf("a read of at most 100 bytes returned %d", len(r.Stdout))
		}
		got.WriteString(r.Stdout)
		if r.Running || r.More {
			return fmt.Errorf("read %d bytes so far", got.Len())
		}
		return nil
	})
	if got.String() != long+"\n" {
		t.Fatalf("bounded reads put together %q; want %q", got.String(), long+"\n")
	}
}
