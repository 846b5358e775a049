package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// fakeShell is a background process of a fake sandbox.
type fakeShell struct {
	pid     uint32
	cmd     ShellCommand
	running bool
	exit    int
	output  string // printed and not yet read
}

// RunShell runs shellFn, or echoes the command's words after "echo ".
func (f *fakeSandboxes) RunShell(ctx context.Context, id string, c ShellCommand, onEvent func(Event)) (ShellResult, error) {
	if err := f.enter(ctx, "RunShell", id); err != nil {
		return ShellResult{}, err
	}
	f.mu.Lock()
	_, err := f.box(id)
	fn := f.shellFn
	f.lastCmd = append(f.lastCmd, c.Cmd)
	f.mu.Unlock()
	if err != nil {
		return ShellResult{}, err
	}
	if fn != nil {
		return fn(ctx, c, onEvent)
	}
	onEvent(Event{Started: true})
	if fakeSleepsPast(c.Cmd, c.Timeout) {
		return ShellResult{ExitCode: -1, TimedOut: true}, nil
	}
	out := fakeShellOutput(c.Cmd)
	if out != "" {
		onEvent(Event{Stdout: out})
	}
	return ShellResult{Stdout: out}, nil
}

// fakeShellOutput is what a fake command prints: echo its words, any
// other command its own text.
func fakeShellOutput(cmd string) string {
	if strings.HasPrefix(cmd, "sleep ") {
		return ""
	}
	return strings.TrimPrefix(cmd, "echo ") + "\n"
}

// fakeSleepsPast tells whether cmd is "sleep N" for longer than timeout;
// the fake takes no time, it only says the command would have timed out.
func fakeSleepsPast(cmd string, timeout time.Duration) bool {
	arg, ok := strings.CutPrefix(cmd, "sleep ")
	secs, err := strconv.Atoi(arg)
	return ok && err == nil && timeout > 0 && time.Duration(secs)*time.Second > timeout
}

func (f *fakeSandboxes) StartShell(ctx context.Context, id string, c ShellCommand) (uint32, error) {
	if err := f.enter(ctx, "StartShell", id); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return 0, err
	}
	if f.shells == nil {
		f.shells = map[string]map[string]*fakeShell{}
	}
	if f.shells[id] == nil {
		f.shells[id] = map[string]*fakeShell{}
	}
	pid := uint32(100 + len(f.shells[id]))
	f.shells[id][c.Tag] = &fakeShell{pid: pid, cmd: c, running: true, output: fakeShellOutput(c.Cmd)}
	return pid, nil
}

func (f *fakeSandboxes) ListShells(ctx context.Context, id string) ([]ShellProcess, error) {
	if err := f.enter(ctx, "ListShells", id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return nil, err
	}
	// The sandbox's own processes have no tag of ours.
	out := []ShellProcess{{PID: 1, Tag: "startCmd", Cmd: "jupyter"}}
	for tag, p := range f.shells[id] {
		if p.running {
			out = append(out, ShellProcess{PID: p.pid, Tag: tag, Cmd: p.cmd.Cmd, Cwd: p.cmd.Cwd})
		}
	}
	return out, nil
}

// ReadShell hands over the unread output, up to r.MaxBytes; a running
// process then ends with exit code 0 (a killed one ended with -1).
func (f *fakeSandboxes) ReadShell(ctx context.Context, id, tag string, r ShellReadRequest) (ShellRead, error) {
	if err := f.enter(ctx, "ReadShell", id); err != nil {
		return ShellRead{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return ShellRead{}, err
	}
	p, ok := f.shells[id][tag]
	if !ok {
		return ShellRead{}, Errorf(ErrNotFound, "no process %s", tag)
	}
	out := p.output[:min(len(p.output), r.MaxBytes)]
	p.output = p.output[len(out):]
	if p.running {
		p.running, p.exit = false, 0
	}
	return ShellRead{Stdout: out, ExitCode: p.exit, More: p.output != "", Dir: CommandOutputDir + "/" + tag,
		StdoutBytes: int64(len(fakeShellOutput(p.cmd.Cmd)))}, nil
}

func (f *fakeSandboxes) KillShell(ctx context.Context, id, tag string) error {
	if err := f.enter(ctx, "KillShell", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.box(id); err != nil {
		return err
	}
	p, ok := f.shells[id][tag]
	if !ok || !p.running {
		return fmt.Errorf("kill %s: %w", tag, ErrNotFound)
	}
	p.running, p.exit = false, -1
	return nil
}
