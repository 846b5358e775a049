package e2b

import (
	"context"
	"errors"
	"io"
	"sync"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// CommandHandle is a process started or connected to in the background.
type CommandHandle struct {
	// PID is the process id inside the sandbox.
	PID uint32

	op     string
	sb     *Sandbox
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	stdout headBuffer // the first bytes only: a chatty process must not grow the caller's memory
	stderr headBuffer
	result *CommandResult
	err    error
}

// outputSinks are the live callbacks of a handle.
type outputSinks struct {
	stdout, stderr, pty func([]byte)
}

type eventStream interface {
	Receive() bool
	Event() *process.ProcessEvent
	Err() error
	Close() error
}

type eventMsg interface{ GetEvent() *process.ProcessEvent }

// streamAdapter gives Start and Connect streams one shape.
type streamAdapter[T any] struct {
	s *connect.ServerStreamForClient[T]
}

func (a streamAdapter[T]) Receive() bool { return a.s.Receive() }
func (a streamAdapter[T]) Err() error    { return a.s.Err() }
func (a streamAdapter[T]) Close() error  { return a.s.Close() }
func (a streamAdapter[T]) Event() *process.ProcessEvent {
	return any(a.s.Msg()).(eventMsg).GetEvent()
}

// newHandle waits for the start event (bounded by timer), then consumes the
// rest of the stream on its own goroutine.
// keep bounds the stdout and stderr it holds (see Config.MaxOutputBytes).
func newHandle(op string, sb *Sandbox, s eventStream, timer *streamTimer, cancel context.CancelFunc, sinks outputSinks, keep int) (*CommandHandle, error) {
	ok := s.Receive()
	timer.stop()
	var err error
	switch {
	case !ok && timer.timedOut():
		err = timeoutErr(op, sb.ID, s.Err())
	case !ok:
		err = s.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
	case s.Event().GetStart() == nil:
		err = errors.New("expected start event")
	}
	if err != nil {
		s.Close()
		cancel()
		return nil, wrapErr(op, sb.ID, err)
	}
	h := &CommandHandle{PID: s.Event().GetStart().GetPid(), op: op, sb: sb, cancel: cancel, done: make(chan struct{}),
		stdout: headBuffer{max: keep}, stderr: headBuffer{max: keep}}
	go h.consume(s, sinks)
	return h, nil
}

func (h *CommandHandle) consume(s eventStream, sinks outputSinks) {
	defer close(h.done)
	defer h.cancel()
	defer s.Close()
	for s.Receive() {
		ev := s.Event()
		if d := ev.GetData(); d != nil {
			h.data(d, sinks)
		}
		if end := ev.GetEnd(); end != nil {
			h.finish(end)
			return
		}
	}
	err := s.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	h.mu.Lock()
	h.err = wrapErr(h.op, h.sb.ID, err)
	h.mu.Unlock()
}

func (h *CommandHandle) data(d *process.ProcessEvent_DataEvent, sinks outputSinks) {
	switch out := d.GetOutput().(type) {
	case *process.ProcessEvent_DataEvent_Stdout:
		h.mu.Lock()
		h.stdout.write(out.Stdout)
		h.mu.Unlock()
		if sinks.stdout != nil {
			sinks.stdout(out.Stdout)
		}
	case *process.ProcessEvent_DataEvent_Stderr:
		h.mu.Lock()
		h.stderr.write(out.Stderr)
		h.mu.Unlock()
		if sinks.stderr != nil {
			sinks.stderr(out.Stderr)
		}
	case *process.ProcessEvent_DataEvent_Pty:
		if sinks.pty != nil {
			sinks.pty(out.Pty)
		}
	}
}

func (h *CommandHandle) finish(end *process.ProcessEvent_EndEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.result = &CommandResult{ExitCode: int(end.GetExitCode()), Stdout: h.stdout.buf.String(),
		Stderr: h.stderr.buf.String(), Error: end.GetError(), Status: end.GetStatus(),
		Truncated: h.stdout.truncated || h.stderr.truncated}
}

// Wait blocks until the process ends and returns its result; a non-zero
// exit also returns a *CommandExitError. It returns early with ctx's error
// when ctx ends (the process keeps running), and with an error when the
// handle was disconnected or the stream broke.
func (h *CommandHandle) Wait(ctx context.Context) (*CommandResult, error) {
	select {
	case <-h.done:
	case <-ctx.Done():
		return nil, wrapErr(h.op, h.sb.ID, ctx.Err())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.result == nil {
		return nil, h.err
	}
	if h.result.ExitCode != 0 {
		return h.result, &CommandExitError{Result: h.result}
	}
	return h.result, nil
}

// Stdout returns the output received so far, up to the handle's output limit.
func (h *CommandHandle) Stdout() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stdout.buf.String()
}

// Stderr returns the error output received so far, up to the handle's output limit.
func (h *CommandHandle) Stderr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.buf.String()
}

// Truncated reports whether output was dropped so far because stdout or
// stderr went past the handle's output limit.
func (h *CommandHandle) Truncated() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stdout.truncated || h.stderr.truncated
}

// Disconnect stops receiving output and releases the connection; the
// process keeps running and can be reattached with Commands.Connect.
// It waits for the reader goroutine to exit.
func (h *CommandHandle) Disconnect() {
	h.cancel()
	<-h.done
}

// Kill sends SIGKILL to the process; false when it had already gone.
func (h *CommandHandle) Kill(ctx context.Context) (bool, error) {
	return h.sb.commands.Kill(ctx, h.PID)
}

// SendStdin writes to the process's stdin (started with Stdin set).
func (h *CommandHandle) SendStdin(ctx context.Context, data []byte) error {
	return h.sb.commands.SendStdin(ctx, h.PID, data)
}

// CloseStdin closes the process's stdin.
func (h *CommandHandle) CloseStdin(ctx context.Context) error {
	return h.sb.commands.CloseStdin(ctx, h.PID)
}
