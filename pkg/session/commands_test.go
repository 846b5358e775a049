package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCommandValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name string
		req  CommandRequest
		kind error
		want string
	}{
		{"empty", CommandRequest{Cmd: "  "}, ErrInvalid, "cmd is empty"},
		{"huge", CommandRequest{Cmd: strings.Repeat("x", maxCmdBytes+1)}, ErrTooLarge, "cmd is larger than"},
		{"nul", CommandRequest{Cmd: "echo \x00"}, ErrInvalid, "without NUL"},
		{"user", CommandRequest{Cmd: "id", User: "admin"}, ErrInvalid, `user must be "user" or "root", not "admin"`},
		{"env name", CommandRequest{Cmd: "env", Envs: map[string]string{"1X": "a"}}, ErrInvalid, `envs name "1X"`},
		{"cwd", CommandRequest{Cmd: "pwd", Cwd: "a\nb"}, ErrInvalid, "cwd: path contains control characters"},
		{"timeout", CommandRequest{Cmd: "true", TimeoutSecs: 901}, ErrInvalid, "timeoutSecs must be between 0 and 900"},
		{"background timeout", CommandRequest{Cmd: "true", Background: true, TimeoutSecs: -1}, ErrInvalid, "timeoutSecs of a background command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.req.Background {
				_, err = r.m.StartCommand(ctx, testKey, tt.req)
			} else {
				_, err = r.m.RunCommand(ctx, testKey, tt.req, nil)
			}
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.kind, tt.want)
			}
		})
	}
	if n := r.sbx.count("Create"); n != 0 {
		t.Fatalf("bad input started %d sandboxes", n)
	}
}

func TestCommandIDs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 10, 0, 0, 123e6, time.UTC)
	id := newCommandID("sbx-1", now)
	fp, started, ok := parseCommandID(id)
	if !ok || fp != sandboxPrint("sbx-1") || !started.Equal(now) {
		t.Fatalf("%s parsed as %q %v %v", id, fp, started, ok)
	}
	if sandboxPrint("sbx-1") == sandboxPrint("sbx-2") {
		t.Fatal("two sandboxes share a fingerprint")
	}
	for _, bad := range []string{"", "123", "cmd-", "cmd-zzzzzzzz-1-00000000", "cmd-0123abcd-1-0000000", id + "x"} {
		if _, _, ok := parseCommandID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("output live and in the result, cwd resolved", func(t *testing.T) {
		r := newRig(t, Config{})
		var seen ShellCommand
		r.sbx.shellFn = func(_ context.Context, c ShellCommand, onEvent func(Event)) (ShellResult, error) {
			seen = c
			onEvent(Event{Started: true})
			onEvent(Event{Stderr: "warn\n"})
			return ShellResult{ExitCode: 3, Stderr: "warn\n"}, nil
		}
		var live strings.Builder
		res, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "x", Cwd: "data", TimeoutSecs: 7}, func(e Event) { live.WriteString(e.Stderr) })
		if err != nil || res.ExitCode != 3 || res.Stderr != "warn\n" || live.String() != "warn\n" || res.TimedOut || res.Error != nil {
			t.Fatalf("%+v %v live %q", res, err, live.String())
		}
		if seen.Cwd != "/home/user/data" || seen.Timeout != 7*time.Second || !strings.HasPrefix(seen.Tag, commandTagPrefix) {
			t.Fatalf("provider got %+v", seen)
		}
	})
	t.Run("a timeout is a result with the output so far", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.shellFn = func(_ context.Context, c ShellCommand, onEvent func(Event)) (ShellResult, error) {
			onEvent(Event{Started: true})
			onEvent(Event{Stdout: "before\n"})
			return ShellResult{ExitCode: -1, Stdout: "before\n", TimedOut: true}, nil
		}
		var errs []*ExecError
		res, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "x", TimeoutSecs: 1}, func(e Event) {
			if e.Error != nil {
				errs = append(errs, e.Error)
			}
		})
		if err != nil || !res.TimedOut || res.Stdout != "before\n" || res.Error == nil || res.Error.Name != "TimeoutError" ||
			!strings.Contains(res.Error.Value, "exceeded its timeout of 1 s") {
			t.Fatalf("%+v %v", res, err)
		}
		if len(errs) != 1 || errs[0].Name != "TimeoutError" {
			t.Fatalf("live errors %+v", errs)
		}
	})
	t.Run("output past the limit is cut", func(t *testing.T) {
		r := newRig(t, Config{MaxOutputBytes: 10})
		r.sbx.shellFn = func(_ context.Context, c ShellCommand, onEvent func(Event)) (ShellResult, error) {
			onEvent(Event{Started: true})
			onEvent(Event{Stdout: "0123456789abcdef"})
			return ShellResult{Stdout: "0123456789abcdef"}, nil
		}
		var live strings.Builder
		res, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "x"}, func(e Event) { live.WriteString(e.Stdout) })
		if err != nil || res.Stdout != "0123456789" || !res.Truncated || live.String() != "0123456789" {
			t.Fatalf("%+v %v live %q", res, err, live.String())
		}
	})
	t.Run("a command that started is not run again on a fresh sandbox", func(t *testing.T) {
		r := newRig(t, Config{})
		r.mustStart(t, ctx, testKey, StartOptions{})
		r.sbx.shellFn = func(_ context.Context, c ShellCommand, onEvent func(Event)) (ShellResult, error) {
			onEvent(Event{Started: true})
			return ShellResult{}, Errorf(ErrSandboxGone, "gone")
		}
		if _, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "x"}, nil); !errors.Is(err, ErrSandboxGone) {
			t.Fatalf("err = %v", err)
		}
		if n := r.sbx.count("RunShell"); n != 1 {
			t.Fatalf("ran %d times", n)
		}
	})
	t.Run("one that never started runs on a fresh sandbox", func(t *testing.T) {
		r := newRig(t, Config{})
		s := r.mustStart(t, ctx, testKey, StartOptions{})
		r.sbx.vanish(s.SandboxID)
		res, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "echo hi"}, nil)
		if err != nil || res.Stdout != "hi\n" || !res.Restarted {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

func TestBackgroundCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{})
	started, err := r.m.StartCommand(ctx, testKey, CommandRequest{Cmd: "echo bg", Background: true, Cwd: "/tmp"})
	if err != nil || started.PID == 0 || !strings.HasPrefix(started.CommandID, commandTagPrefix) {
		t.Fatalf("%+v %v", started, err)
	}
	list, err := r.m.ListCommands(ctx, testKey)
	if err != nil || len(list) != 1 || list[0].CommandID != started.CommandID || list[0].Cmd != "echo bg" ||
		list[0].Cwd != "/tmp" || !list[0].Running || !list[0].StartedAt.Equal(started.StartedAt) {
		t.Fatalf("list %+v %v (started %+v)", list, err, started)
	}
	st, err := r.m.CommandStatus(ctx, testKey, started.CommandID)
	if err != nil || !st.Running || st.PID != started.PID {
		t.Fatalf("status %+v %v", st, err)
	}
	var live strings.Builder
	res, err := r.m.AttachCommand(ctx, testKey, started.CommandID, func(e Event) { live.WriteString(e.Stdout) })
	if err != nil || res.Stdout != "bg\n" || live.String() != "bg\n" || res.CommandID != started.CommandID {
		t.Fatalf("attach %+v %v", res, err)
	}
	if err := r.m.KillCommand(ctx, testKey, started.CommandID); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "is not running") {
		t.Fatalf("kill of an ended command: %v", err)
	}

	for id, kind := range map[string]error{"nope": ErrNotFound, "cmd-00000000-1-00000000": ErrGone} {
		if _, err := r.m.AttachCommand(ctx, testKey, id, nil); !errors.Is(err, kind) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if _, err := r.m.CommandStatus(ctx, testKey, "nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `command "nope" not found in session`) {
		t.Fatalf("unknown id: %v", err)
	}

	// The sandbox replaced: the old id says so.
	s, _ := r.m.Status(ctx, testKey)
	r.sbx.vanish(s.SandboxID)
	if _, err := r.m.CommandStatus(ctx, testKey, started.CommandID); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "has no sandbox now") {
		t.Fatalf("status with the sandbox gone: %v", err)
	}
	if _, err := r.m.RunCommand(ctx, testKey, CommandRequest{Cmd: "echo again"}, nil); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"status": func() error { _, err := r.m.CommandStatus(ctx, testKey, started.CommandID); return err },
		"attach": func() error { _, err := r.m.AttachCommand(ctx, testKey, started.CommandID, nil); return err },
		"kill":   func() error { return r.m.KillCommand(ctx, testKey, started.CommandID) },
	} {
		if err := call(); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "has since been replaced") {
			t.Errorf("%s after replacement: %v", name, err)
		}
	}

	// Reads of an unknown session start nothing.
	other := testKey
	other.SessionID = "never"
	if _, err := r.m.ListCommands(ctx, other); !errors.Is(err, ErrNotFound) {
		t.Fatalf("list of an unknown session: %v", err)
	}
}

func TestReadCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, Config{})
	started, err := r.m.StartCommand(ctx, testKey, CommandRequest{Cmd: "echo bg", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.m.ReadCommand(ctx, testKey, started.CommandID, time.Second)
	if err != nil || out.Running || out.ExitCode == nil || *out.ExitCode != 0 || out.Stdout != "bg\n" ||
		out.StdoutPath != CommandOutputDir+"/"+started.CommandID+"/stdout" || out.StderrPath != CommandOutputDir+"/"+started.CommandID+"/stderr" {
		t.Fatalf("read %+v %v", out, err)
	}
	if out, err := r.m.ReadCommand(ctx, testKey, started.CommandID, 0); err != nil || out.Stdout != "" {
		t.Fatalf("second read %+v %v; want nothing new", out, err)
	}
	for _, wait := range []time.Duration{-time.Second, MaxCommandReadWait + time.Second} {
		if _, err := r.m.ReadCommand(ctx, testKey, started.CommandID, wait); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "waitSecs") {
			t.Errorf("wait %s: %v", wait, err)
		}
	}
	if _, err := r.m.ReadCommand(ctx, testKey, "nope", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}
