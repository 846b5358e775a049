package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// envdTimeoutSlack is how long after a foreground command's timeout envd
// kills it on its own, should this process die before doing so.
const envdTimeoutSlack = 30 * time.Second

// endAfterKill bounds the wait for a killed process's end event, which
// brings the output it printed before it died.
const endAfterKill = 5 * time.Second

// RunShell runs a caller's command and waits for its end; past c.Timeout
// it kills the process and returns the output so far with TimedOut. A
// non-zero exit is a result, not an error.
func (a *E2B) RunShell(ctx context.Context, id string, c session.ShellCommand, onEvent func(session.Event)) (session.ShellResult, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.ShellResult{}, err
	}
	opts := shellOptions(c, c.Timeout+envdTimeoutSlack)
	if onEvent != nil {
		opts.OnStdout = func(b []byte) { onEvent(session.Event{Stdout: string(b)}) }
		opts.OnStderr = func(b []byte) { onEvent(session.Event{Stderr: string(b)}) }
	}
	h, err := sb.Commands().Start(ctx, c.Cmd, opts)
	if err != nil {
		return session.ShellResult{}, domainError("start command", err)
	}
	defer h.Disconnect()
	if onEvent != nil {
		onEvent(session.Event{Started: true})
	}
	wctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	res, err := h.Wait(wctx)
	if err == nil || isExit(err) {
		return shellResult(res), nil
	}
	if ctx.Err() != nil || wctx.Err() == nil {
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), endAfterKill)
		defer kcancel()
		_, _ = h.Kill(kctx) // the caller gave up on it, or the stream broke
		return session.ShellResult{}, domainError("run command", err)
	}
	return a.killTimedOut(ctx, h)
}

// killTimedOut kills a command past its timeout and waits briefly for its
// end, so the result holds everything it printed.
func (a *E2B) killTimedOut(ctx context.Context, h *e2b.CommandHandle) (session.ShellResult, error) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endAfterKill)
	defer cancel()
	if _, err := h.Kill(kctx); err != nil {
		return session.ShellResult{}, domainError("kill command past its timeout", err)
	}
	out := session.ShellResult{ExitCode: -1, TimedOut: true}
	if res, err := h.Wait(kctx); res != nil && (err == nil || isExit(err)) {
		out = shellResult(res)
		out.TimedOut = true
	} else {
		out.Stdout, out.Stderr, out.Truncated = h.Stdout(), h.Stderr(), h.Truncated()
	}
	return out, nil
}

// StartShell starts a command in the background; it keeps running after
// this returns, for c.Timeout or, when that is 0, as long as the sandbox.
// Its output goes to files in the sandbox (see ReadShell), so the start's
// stream is dropped at once, as E2B's SDKs do for a background command.
func (a *E2B) StartShell(ctx context.Context, id string, c session.ShellCommand) (uint32, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return 0, err
	}
	if err := setupCommand(ctx, sb, c); err != nil {
		return 0, err
	}
	lifetime := c.Timeout
	if lifetime == 0 {
		lifetime = -1 // e2b: no limit
	}
	h, err := sb.Commands().Start(ctx, wrapCommand(c.Tag, c.Cmd), shellOptions(c, lifetime))
	if err != nil {
		return 0, domainError("start command", err)
	}
	h.Disconnect()
	if err := recordPID(ctx, sb, c.Tag, h.PID); err != nil {
		// Untracked, it could never be read as ended: better not run.
		_, _ = sb.Commands().KillTag(context.WithoutCancel(ctx), c.Tag)
		return 0, err
	}
	return h.PID, nil
}

// ListShells lists the sandbox's running processes.
func (a *E2B) ListShells(ctx context.Context, id string) ([]session.ShellProcess, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return nil, err
	}
	procs, err := sb.Commands().List(ctx)
	if err != nil {
		return nil, domainError("list processes", err)
	}
	out := make([]session.ShellProcess, 0, len(procs))
	for _, p := range procs {
		out = append(out, session.ShellProcess{PID: p.PID, Tag: p.Tag, Cmd: shellCmd(p), Cwd: p.Cwd})
	}
	return out, nil
}

// shellCmd is the command line of a process: the script of bash -l -c.
func shellCmd(p e2b.ProcessInfo) string {
	if p.Cmd == "/bin/bash" && len(p.Args) == 3 && p.Args[0] == "-l" && p.Args[1] == "-c" {
		return unwrapCommand(p.Args[2])
	}
	line := p.Cmd
	for _, arg := range p.Args {
		line += " " + arg
	}
	return line
}

// KillShell sends SIGKILL to the running process tagged tag.
func (a *E2B) KillShell(ctx context.Context, id, tag string) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	ok, err := sb.Commands().KillTag(ctx, tag)
	if err != nil {
		return processError("kill command "+tag, err)
	}
	if !ok {
		return &session.Error{Kind: session.ErrNotFound, Detail: fmt.Sprintf("kill command %s: no such running process", tag)}
	}
	return nil
}

// processError words envd's not-found as a missing process, not a file.
func processError(doing string, err error) error {
	if errors.Is(err, e2b.ErrNotFound) && !errors.Is(err, e2b.ErrSandboxNotFound) {
		return &session.Error{Kind: session.ErrNotFound, Detail: doing + ": no such process", Err: err}
	}
	return domainError(doing, err)
}

func shellOptions(c session.ShellCommand, lifetime time.Duration) e2b.CommandOptions {
	return e2b.CommandOptions{Envs: c.Envs, Cwd: c.Cwd, User: c.User, Tag: c.Tag, Timeout: lifetime}
}

func isExit(err error) bool {
	var exit *e2b.CommandExitError
	return errors.As(err, &exit)
}

func shellResult(r *e2b.CommandResult) session.ShellResult {
	return session.ShellResult{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated}
}
