package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// CommandRequest is a shell command to run in a session's sandbox.
type CommandRequest struct {
	// Cmd is run by bash -l -c, as E2B's commands.run runs it.
	Cmd string
	// Cwd is the working directory; relative paths resolve in WorkDir,
	// empty means WorkDir.
	Cwd  string
	Envs map[string]string
	// TimeoutSecs bounds a foreground command (default Config.ExecTimeout,
	// at most 15 minutes): past it the process is killed and the result
	// says TimedOut. For a background command it is the process's lifetime;
	// 0 means as long as the sandbox lives.
	TimeoutSecs int
	// Background starts the command and returns at once with its id.
	Background bool
	// User runs the command as "user" (the default) or "root".
	User string
}

// CommandResult is how a shell command ended, as the API returns it.
type CommandResult struct {
	// CommandID is set on a result read back by its id (AttachCommand).
	CommandID string `json:"commandId,omitempty"`
	// ExitCode is the process's exit status; -1 when a signal ended it.
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMs int64  `json:"durationMs"`
	// Truncated is set when stdout or stderr went past the output limit.
	Truncated bool `json:"truncated"`
	// TimedOut is set when the command ran past its timeout and was killed:
	// Error is then a TimeoutError naming the limit, and the output is what
	// arrived before.
	TimedOut bool       `json:"timedOut"`
	Error    *ExecError `json:"error,omitempty"`
	// Restarted is set when this call started a fresh sandbox in place of
	// one the session had.
	Restarted bool         `json:"restarted"`
	Restored  *RestoreInfo `json:"restored,omitempty"`
}

// CommandInfo describes a command started in the background.
type CommandInfo struct {
	CommandID string    `json:"commandId"`
	PID       uint32    `json:"pid"`
	Cmd       string    `json:"cmd"`
	Cwd       string    `json:"cwd"`
	StartedAt time.Time `json:"startedAt"`
	// Running is false for a command that has ended but whose end the
	// sandbox still remembers; Result then says how it ended.
	Running bool           `json:"running"`
	Result  *CommandResult `json:"result,omitempty"`
}

// CommandStarted is the answer to a background command.
type CommandStarted struct {
	CommandID string    `json:"commandId"`
	PID       uint32    `json:"pid"`
	StartedAt time.Time `json:"startedAt"`
	Restarted bool      `json:"restarted"`
}

// ShellCommand is a command as the sandbox provider runs it.
type ShellCommand struct {
	Cmd  string
	Cwd  string
	User string
	Envs map[string]string
	// Tag names the process so it can be found again.
	Tag string
	// Timeout: for RunShell, when the process is killed and the result
	// marked TimedOut; for StartShell, the process's lifetime (0: none).
	Timeout time.Duration
}

// ShellResult is how a process ended, as the provider saw it.
type ShellResult struct {
	ExitCode  int
	Stdout    string
	Stderr    string
	TimedOut  bool
	Truncated bool
}

// CommandOutputDir is the sandbox directory that keeps the output of
// background commands: CommandOutputDir/<commandId>/stdout and stderr.
const CommandOutputDir = "/tmp/sessionbox-commands"

// ShellReadRequest says how long a read of a background command waits.
type ShellReadRequest struct {
	// Wait is how long to wait for the command's end; with UntilOutput,
	// for its end or any new output. A read also returns once MaxBytes of
	// a stream wait.
	Wait        time.Duration
	UntilOutput bool
	// MaxBytes caps the stdout and the stderr of one read.
	MaxBytes int
}

// ShellRead is one read of a background command's output.
type ShellRead struct {
	// Stdout and Stderr are the output since the last read.
	Stdout, Stderr string
	Running        bool
	// ExitCode is how the command ended, when not Running; -1 when a
	// signal ended it (a kill, its timeout).
	ExitCode int
	// More is set when output past MaxBytes waits for the next read.
	More bool
	// Dir holds the whole output, as files stdout and stderr, of
	// StdoutBytes and StderrBytes so far.
	Dir                      string
	StdoutBytes, StderrBytes int64
}

// ShellProcess is a running process of a sandbox.
type ShellProcess struct {
	PID uint32
	Tag string
	// Cmd is the shell command when the process is bash -l -c <cmd>, else
	// the program and its arguments.
	Cmd string
	Cwd string
}

// Limits of commands.
const (
	maxCmdBytes = 1 << 20
	// maxBackgroundTimeout caps a background command's lifetime; the
	// sandbox's own lifetime usually ends it first.
	maxBackgroundTimeout = 24 * time.Hour
	// commandTagPrefix marks the processes started through this API, so a
	// listing leaves out the sandbox's own (the interpreter, pip).
	commandTagPrefix = "cmd-"
)

// commandIDRE is the shape of a command id: the prefix, a fingerprint of
// the sandbox it runs in, its start time (base-36 milliseconds) and a
// random part.
var commandIDRE = lazyRegexp(`^cmd-([0-9a-f]{8})-([0-9a-z]{1,12})-([0-9a-f]{8})$`)

// sandboxPrint is the fingerprint of a sandbox id a command id carries, so
// an id from a sandbox since replaced is told apart from an unknown one.
func sandboxPrint(sandboxID string) string {
	sum := sha256.Sum256([]byte(sandboxID))
	return hex.EncodeToString(sum[:4])
}

func newCommandID(sandboxID string, now time.Time) string {
	return commandTagPrefix + sandboxPrint(sandboxID) + "-" + strconv.FormatInt(now.UnixMilli(), 36) + "-" + randomID(4)
}

// parseCommandID returns the sandbox fingerprint and start time in id.
func parseCommandID(id string) (print string, started time.Time, ok bool) {
	m := commandIDRE().FindStringSubmatch(id)
	if m == nil {
		return "", time.Time{}, false
	}
	ms, err := strconv.ParseInt(m[2], 36, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return m[1], time.UnixMilli(ms).UTC(), true
}

// RunCommand runs a shell command in the session's sandbox, starting or
// resuming it first, and waits for its end; onEvent, when not nil, gets
// its output live (cut at the output limit like the result). A non-zero
// exit is a result, not an error; so is a timeout, which kills the process
// and answers with what it printed before. A command that reached the
// sandbox is never run again.
func (m *Manager) RunCommand(ctx context.Context, key Key, req CommandRequest, onEvent func(Event)) (*CommandResult, error) {
	timeout, err := m.validateCommand(key, &req)
	if err != nil {
		return nil, err
	}
	if req.Background {
		return nil, Errorf(ErrInvalid, "background commands are started with StartCommand")
	}
	var out *CommandResult
	var restored *RestoreInfo
	restarted, err := m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		restored = cmpOr(s.Restored, restored)
		sink := m.newOutputSink(onEvent)
		sink.begin()
		start := m.clock.Now()
		cctx, cancel := context.WithTimeout(ctx, timeout+m.cfg.CallBackstopSlack)
		defer cancel()
		sh := ShellCommand{Cmd: req.Cmd, Cwd: req.Cwd, User: req.User, Envs: req.Envs,
			Tag: newCommandID(s.SandboxID, start), Timeout: timeout}
		res, err := m.sandboxes.RunShell(cctx, s.SandboxID, sh, sink.event)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
				err = &Error{Kind: ErrTimeout, Detail: fmt.Sprintf("the sandbox did not answer within %d s of the command's timeout of %d s", int(m.cfg.CallBackstopSlack/time.Second), int(timeout/time.Second)), Err: err}
			}
			if m.stoppedUnder(ctx, key, err) {
				return false, &Error{Kind: ErrConflict, Detail: "the session was stopped during this command; its sandbox is gone", Err: err}
			}
			if m.diedUnder(ctx, s.SandboxID, err) {
				return false, sandboxDied(key, "command", err)
			}
			return !sink.started(), fmt.Errorf("run command in sandbox %s: %w", s.SandboxID, err)
		}
		out = m.commandResult(sink, res, timeout)
		out.DurationMs = m.clock.Now().Sub(start).Milliseconds()
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	out.Restarted = restarted
	out.Restored = restored
	return out, nil
}

// commandResult bounds a provider's result as its live output was, and
// words a timeout as execute does.
func (m *Manager) commandResult(sink *outputSink, res ShellResult, timeout time.Duration) *CommandResult {
	r := sink.finish(&ExecResult{Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated})
	out := &CommandResult{ExitCode: res.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated, TimedOut: res.TimedOut}
	if res.TimedOut {
		out.Error = &ExecError{Name: "TimeoutError", Value: fmt.Sprintf(
			"command exceeded its timeout of %d s and was killed; its output until then is kept", int(timeout/time.Second))}
		sink.event(Event{Error: out.Error})
	}
	return out
}

// StartCommand starts a shell command in the background in the session's
// sandbox, starting or resuming the sandbox first, and returns its id once
// it runs. Its output waits in the sandbox for AttachCommand.
func (m *Manager) StartCommand(ctx context.Context, key Key, req CommandRequest) (*CommandStarted, error) {
	timeout, err := m.validateCommand(key, &req)
	if err != nil {
		return nil, err
	}
	if !req.Background {
		return nil, Errorf(ErrInvalid, "StartCommand takes background commands only")
	}
	var out *CommandStarted
	restarted, err := m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		now := m.clock.Now()
		id := newCommandID(s.SandboxID, now)
		pid, err := m.sandboxes.StartShell(ctx, s.SandboxID, ShellCommand{Cmd: req.Cmd, Cwd: req.Cwd, User: req.User,
			Envs: req.Envs, Tag: id, Timeout: timeout})
		if err != nil {
			// A start that failed with the sandbox gone ran nothing.
			return true, fmt.Errorf("start command in sandbox %s: %w", s.SandboxID, err)
		}
		out = &CommandStarted{CommandID: id, PID: pid, StartedAt: now.UTC().Truncate(time.Millisecond)}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	out.Restarted = restarted
	return out, nil
}

// ListCommands lists the commands started through this API that run in
// the session's sandbox (background ones, and foreground ones not yet
// ended), oldest first. It never starts a sandbox.
func (m *Manager) ListCommands(ctx context.Context, key Key) ([]CommandInfo, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	var out []CommandInfo
	err := m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		procs, err := m.sandboxes.ListShells(ctx, s.SandboxID)
		if err != nil {
			return true, fmt.Errorf("list commands in sandbox %s: %w", s.SandboxID, err)
		}
		out = commandInfos(procs, sandboxPrint(s.SandboxID))
		return false, nil
	})
	if errors.Is(err, errNoSandbox) {
		return []CommandInfo{}, nil
	}
	return out, err
}

// commandInfos keeps the processes started through this API in the
// sandbox with the given fingerprint.
func commandInfos(procs []ShellProcess, print string) []CommandInfo {
	out := []CommandInfo{}
	for _, p := range procs {
		fp, started, ok := parseCommandID(p.Tag)
		if !ok || fp != print {
			continue
		}
		out = append(out, CommandInfo{CommandID: p.Tag, PID: p.PID, Cmd: p.Cmd, Cwd: p.Cwd, StartedAt: started, Running: true})
	}
	slices.SortStableFunc(out, func(a, b CommandInfo) int { return a.StartedAt.Compare(b.StartedAt) })
	return out
}

// CommandStatus describes one background command: running, or ended (with
// how it ended and the output nobody had read) while the sandbox still
// remembers it. It never starts a sandbox.
func (m *Manager) CommandStatus(ctx context.Context, key Key, commandID string) (*CommandInfo, error) {
	var out *CommandInfo
	err := m.onCommand(ctx, key, commandID, func(ctx context.Context, s *Session) error {
		procs, err := m.sandboxes.ListShells(ctx, s.SandboxID)
		if err != nil {
			return fmt.Errorf("list commands in sandbox %s: %w", s.SandboxID, err)
		}
		for _, c := range commandInfos(procs, sandboxPrint(s.SandboxID)) {
			if c.CommandID == commandID {
				out = &c
				return nil
			}
		}
		// Not running: an ended one answers at once with its end and
		// the output nobody had read.
		r, err := m.readShell(ctx, s, commandID, ShellReadRequest{MaxBytes: m.cfg.MaxOutputBytes})
		if err != nil {
			return err
		}
		_, started, _ := parseCommandID(commandID)
		out = &CommandInfo{CommandID: commandID, StartedAt: started, Running: r.Running, Result: &CommandResult{
			CommandID: commandID, ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.More}}
		if r.Running { // it started after the listing
			out.Result = nil
		}
		return nil
	})
	return out, err
}

// KillCommand sends SIGKILL to a running background command (and its
// process group). It never starts a sandbox.
func (m *Manager) KillCommand(ctx context.Context, key Key, commandID string) error {
	return m.onCommand(ctx, key, commandID, func(ctx context.Context, s *Session) error {
		err := m.sandboxes.KillShell(ctx, s.SandboxID, commandID)
		if errors.Is(err, ErrNotFound) {
			return &Error{Kind: ErrNotFound, Detail: fmt.Sprintf("command %q is not running in session %q: it has ended, or never ran", commandID, s.SessionID)}
		}
		if err != nil {
			return fmt.Errorf("kill command %s in sandbox %s: %w", commandID, s.SandboxID, err)
		}
		return nil
	})
}

// onCommand runs op on the sandbox a command id names, after checking the
// id's shape and that the session's sandbox is still the one the command
// was started in. Never starts a sandbox.
func (m *Manager) onCommand(ctx context.Context, key Key, commandID string, op func(ctx context.Context, s *Session) error) error {
	if err := validateKey(key); err != nil {
		return err
	}
	fp, _, ok := parseCommandID(commandID)
	if !ok {
		return unknownCommand(key, commandID)
	}
	err := m.withExistingSandbox(ctx, key, func(ctx context.Context, s *Session) (bool, error) {
		if sandboxPrint(s.SandboxID) != fp {
			return false, replacedCommand(key, commandID)
		}
		err := op(ctx, s)
		return errors.Is(err, ErrSandboxGone), err
	})
	if errors.Is(err, errNoSandbox) {
		return &Error{Kind: ErrGone, Detail: fmt.Sprintf(
			"session %q has no sandbox now: the sandbox command %q ran in is gone, and the command with it", key.SessionID, truncateForDetail(commandID))}
	}
	return err
}

func unknownCommand(key Key, commandID string) error {
	return &Error{Kind: ErrNotFound, Detail: fmt.Sprintf("command %q not found in session %q", truncateForDetail(commandID), key.SessionID)}
}

func replacedCommand(key Key, commandID string) error {
	return &Error{Kind: ErrGone, Detail: fmt.Sprintf(
		"command %q did not run in session %q's current sandbox: the sandbox it ran in has since been replaced, and its process and output went with it", commandID, key.SessionID)}
}

// validateCommand checks req, resolves its cwd and returns its timeout.
func (m *Manager) validateCommand(key Key, req *CommandRequest) (time.Duration, error) {
	if err := validateKey(key); err != nil {
		return 0, err
	}
	switch {
	case strings.TrimSpace(req.Cmd) == "":
		return 0, Errorf(ErrInvalid, "cmd is empty")
	case len(req.Cmd) > maxCmdBytes:
		return 0, &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("cmd is larger than %d bytes", maxCmdBytes)}
	case !utf8.ValidString(req.Cmd) || strings.ContainsRune(req.Cmd, 0):
		return 0, Errorf(ErrInvalid, "cmd must be valid UTF-8 without NUL")
	}
	switch req.User {
	case "", "user", "root":
	default:
		return 0, Errorf(ErrInvalid, "user must be \"user\" or \"root\", not %q", truncateForDetail(req.User))
	}
	if err := validateStringMap("envs", req.Envs, envNameRE()); err != nil {
		return 0, err
	}
	cwd := WorkDir
	if req.Cwd != "" {
		c, err := CleanPath(req.Cwd)
		if err != nil {
			return 0, Errorf(ErrInvalid, "cwd: %s", err.(*Error).Detail)
		}
		cwd = c
	}
	req.Cwd = cwd
	if req.Background {
		if req.TimeoutSecs < 0 || time.Duration(req.TimeoutSecs)*time.Second > maxBackgroundTimeout {
			return 0, Errorf(ErrInvalid, "timeoutSecs of a background command must be between 0 (no limit) and %d", int(maxBackgroundTimeout/time.Second))
		}
		return time.Duration(req.TimeoutSecs) * time.Second, nil
	}
	return m.execTimeout(req.TimeoutSecs)
}
