package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A background command's output waits in its sandbox, in files, with a
// read cursor beside them (see Sandboxes.ReadShell): nothing about it lives
// in this process, so a read served by another process (a Lambda) goes on
// where the last one stopped, and a read cut short loses nothing.

// MaxCommandReadWait bounds how long one ReadCommand waits.
const MaxCommandReadWait = 60 * time.Second

// attachPoll is how long one read of an attachment waits for new output.
const attachPoll = 10 * time.Second

// CommandOutput is one read of a background command's output: what it
// printed since the last read, and whether it still runs.
type CommandOutput struct {
	CommandID string `json:"commandId"`
	Running   bool   `json:"running"`
	// ExitCode is set once the command has ended; -1 when a signal ended
	// it (a kill, its timeout).
	ExitCode *int   `json:"exitCode,omitempty"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// More is set when output past this read's limit waits for the next.
	More bool `json:"more"`
	// StdoutPath and StderrPath are the sandbox files holding the whole
	// output, StdoutBytes and StderrBytes long so far.
	StdoutPath  string `json:"stdoutPath"`
	StderrPath  string `json:"stderrPath"`
	StdoutBytes int64  `json:"stdoutBytes"`
	StderrBytes int64  `json:"stderrBytes"`
}

// ReadCommand returns what a background command printed since the last
// read, waiting up to wait for its end (returning sooner when a read's
// worth of output, Config.MaxOutputBytes of a stream, is there). It never
// starts a sandbox.
func (m *Manager) ReadCommand(ctx context.Context, key Key, commandID string, wait time.Duration) (*CommandOutput, error) {
	if wait < 0 || wait > MaxCommandReadWait {
		return nil, Errorf(ErrInvalid, "waitSecs must be between 0 and %d", int(MaxCommandReadWait/time.Second))
	}
	var out *CommandOutput
	err := m.onCommand(ctx, key, commandID, func(ctx context.Context, s *Session) error {
		r, err := m.readShell(ctx, s, commandID, ShellReadRequest{Wait: wait, MaxBytes: m.cfg.MaxOutputBytes})
		if err != nil {
			return err
		}
		out = &CommandOutput{CommandID: commandID, Running: r.Running, Stdout: r.Stdout, Stderr: r.Stderr, More: r.More,
			StdoutPath: r.Dir + "/stdout", StderrPath: r.Dir + "/stderr", StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes}
		if !r.Running {
			out.ExitCode = &r.ExitCode
		}
		return nil
	})
	return out, err
}

func (m *Manager) readShell(ctx context.Context, s *Session, commandID string, r ShellReadRequest) (ShellRead, error) {
	out, err := m.sandboxes.ReadShell(ctx, s.SandboxID, commandID, r)
	if errors.Is(err, ErrNotFound) {
		return ShellRead{}, unknownCommand(s.Key, commandID)
	}
	if err != nil {
		return ShellRead{}, fmt.Errorf("read command %s in sandbox %s: %w", commandID, s.SandboxID, err)
	}
	return out, nil
}

// AttachCommand follows a background command to its end: onEvent, when
// not nil, gets the output nobody had read and then its output as it
// comes; the result says how it ended, with that output. It never starts
// a sandbox. Output is delivered once: a second attach (or ReadCommand)
// gets only what came after the first, and an attach cut short loses
// nothing that it did not deliver.
func (m *Manager) AttachCommand(ctx context.Context, key Key, commandID string, onEvent func(Event)) (*CommandResult, error) {
	var out *CommandResult
	err := m.onCommand(ctx, key, commandID, func(ctx context.Context, s *Session) error {
		res, err := m.attach(ctx, s, commandID, onEvent)
		out = res
		return err
	})
	return out, err
}

// attach follows a command to its end in reads that each return with new
// output, passing it on as it comes; the result holds what came (cut at
// the output limit, the whole being in the command's files).
func (m *Manager) attach(ctx context.Context, s *Session, commandID string, onEvent func(Event)) (*CommandResult, error) {
	sink := m.newOutputSink(onEvent)
	sink.begin()
	start := m.clock.Now()
	var so, se strings.Builder
	for {
		r, err := m.readShell(ctx, s, commandID, ShellReadRequest{Wait: attachPoll, UntilOutput: true, MaxBytes: m.cfg.MaxOutputBytes})
		if err != nil {
			return nil, err
		}
		keep(&so, r.Stdout, m.cfg.MaxOutputBytes)
		keep(&se, r.Stderr, m.cfg.MaxOutputBytes)
		if r.Stdout != "" {
			sink.event(Event{Stdout: r.Stdout})
		}
		if r.Stderr != "" {
			sink.event(Event{Stderr: r.Stderr})
		}
		if r.Running || r.More {
			continue
		}
		out := m.commandResult(sink, ShellResult{ExitCode: r.ExitCode, Stdout: so.String(), Stderr: se.String()}, 0)
		out.CommandID = commandID
		out.DurationMs = m.clock.Now().Sub(start).Milliseconds()
		return out, nil
	}
}

// keep appends s to b while b is within limit, one byte past it marking
// the cut for the sink.
func keep(b *strings.Builder, s string, limit int) {
	if room := limit + 1 - b.Len(); room > 0 {
		b.WriteString(s[:min(room, len(s))])
	}
}
