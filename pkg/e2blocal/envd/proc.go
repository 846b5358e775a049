//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/creack/pty"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

const (
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGTERM
)

// proc is one started process: its pipes, its subscribers and, once it has
// exited, its end event.
type proc struct {
	pid    uint32
	seq    uint64 // start order, for List and tag resolution
	tag    *string
	config *process.ProcessConfig
	maxOut int64
	cmd    *exec.Cmd
	cred   *syscall.Credential // who it runs as; nil: the server's identity
	ptmx   *os.File            // PTY master, nil for pipe processes

	inMu  sync.Mutex
	stdin *os.File // write end of stdin, nil when not enabled or closed

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	pending backlog // output nobody was connected to receive
	end     *process.ProcessEvent
	done    chan struct{}
}

func (p *proc) hasExited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// subscriber is one stream's view of a process. Its queue never blocks the
// pipe readers; it is bounded by the output limit instead, so a stream that
// stops reading loses output rather than growing memory.
type subscriber struct {
	mu     sync.Mutex
	limit  int64
	out    backlog
	notify chan struct{}
}

func newSubscriber(limit int64) *subscriber {
	return &subscriber{limit: limit, notify: make(chan struct{}, 1)}
}

func (s *subscriber) pushOutput(kind outKind, chunk []byte) {
	s.mu.Lock()
	s.out.addOutput(kind, chunk, s.limit)
	s.mu.Unlock()
	s.wake()
}

func (s *subscriber) pushEvent(ev *process.ProcessEvent) {
	s.mu.Lock()
	s.out.addEvent(ev)
	s.mu.Unlock()
	s.wake()
}

func (s *subscriber) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *subscriber) take() []*process.ProcessEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.take()
}

// detach empties the queue and returns it whole, size and drop state included.
func (s *subscriber) detach() backlog {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.out
	s.out = backlog{}
	return out
}

// subscribe attaches a stream: it first receives the output buffered while
// nobody was connected, then live output, then the end event.
func (p *proc) subscribe() *subscriber {
	sub := newSubscriber(p.maxOut)
	p.mu.Lock()
	defer p.mu.Unlock()
	sub.out = p.pending
	p.pending = backlog{}
	if p.end != nil {
		sub.out.addEvent(p.end)
	}
	p.subs[sub] = struct{}{}
	return sub
}

// unsubscribe detaches a stream; output it had not sent yet goes back to the
// pending buffer when it was the last subscriber, so a later Connect gets it.
func (p *proc) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.subs, sub)
	if len(p.subs) > 0 {
		return
	}
	left := sub.detach()
	kept := left.events[:0]
	for _, ev := range left.events {
		if ev.GetEnd() == nil {
			kept = append(kept, ev)
		}
	}
	left.events = kept
	p.pending.prepend(left)
}

type outKind int

const (
	outStdout outKind = iota
	outStderr
	outPTY
)

func dataEvent(kind outKind, b []byte) *process.ProcessEvent {
	d := &process.ProcessEvent_DataEvent{}
	switch kind {
	case outStdout:
		d.Output = &process.ProcessEvent_DataEvent_Stdout{Stdout: b}
	case outStderr:
		d.Output = &process.ProcessEvent_DataEvent_Stderr{Stderr: b}
	default:
		d.Output = &process.ProcessEvent_DataEvent_Pty{Pty: b}
	}
	return &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: d}}
}

// publish hands a chunk of output to every subscriber, or to the pending
// buffer when none is connected. Each of those bounds only what it holds
// undelivered (see backlog), so output never stops for a reader that keeps up.
func (p *proc) publish(kind outKind, chunk []byte) {
	data := append([]byte(nil), chunk...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.subs) == 0 {
		p.pending.addOutput(kind, data, p.maxOut)
		return
	}
	for sub := range p.subs {
		sub.pushOutput(kind, data)
	}
}

func (p *proc) finish(end *process.ProcessEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end = end
	for sub := range p.subs {
		sub.pushEvent(end)
	}
	close(p.done)
}

// signal sends sig to the process group so the whole tree gets it.
func (p *proc) signal(sig syscall.Signal) error {
	if p.hasExited() {
		return nil
	}
	err := syscall.Kill(-int(p.pid), sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.pid, err)
	}
	return nil
}

// writeInput writes to stdin or the PTY; ctx cancellation interrupts a write
// blocked on a full pipe.
func (p *proc) writeInput(ctx context.Context, data []byte, toPTY bool) error {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	f := p.stdin
	switch {
	case p.ptmx != nil:
		f = p.ptmx
	case toPTY:
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %d has no PTY", p.pid))
	case f == nil:
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("stdin of process %d is not enabled or was closed", p.pid))
	}
	_ = f.SetWriteDeadline(time.Time{})
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = f.SetWriteDeadline(time.Now())
		close(fired)
	})
	_, err := f.Write(data)
	if !stop() {
		<-fired
	}
	if err != nil {
		if ctx.Err() != nil {
			return connect.NewError(ctxCode(ctx.Err()), fmt.Errorf("write input to process %d: %w", p.pid, err))
		}
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("write input to process %d: %w", p.pid, err))
	}
	return nil
}

func (p *proc) closeStdin() error {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if p.ptmx != nil {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %d uses a PTY; stdin cannot be closed", p.pid))
	}
	if p.stdin == nil {
		return nil
	}
	err := p.stdin.Close()
	p.stdin = nil
	if err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("close stdin of process %d: %w", p.pid, err))
	}
	return nil
}

func (p *proc) resize(size *process.PTY_Size) error {
	if p.ptmx == nil {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %d has no PTY", p.pid))
	}
	if err := pty.Setsize(p.ptmx, winsize(size)); err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("resize PTY of process %d: %w", p.pid, err))
	}
	return nil
}

func winsize(size *process.PTY_Size) *pty.Winsize {
	ws := &pty.Winsize{Cols: 80, Rows: 24}
	if size.GetCols() > 0 && size.GetCols() <= 0xffff {
		ws.Cols = uint16(size.GetCols())
	}
	if size.GetRows() > 0 && size.GetRows() <= 0xffff {
		ws.Rows = uint16(size.GetRows())
	}
	return ws
}
