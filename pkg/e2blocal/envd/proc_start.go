//go:build linux

package envd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// After the process exits, its output readers get drainGrace to reach EOF.
// Past it, a background child that inherited the pipe may be what keeps it
// open, and it would hold the end event back for as long as it lives; but
// on a loaded machine the readers may simply not have run yet, with the
// process's last output still in the pipe. So the pipes are closed only
// once they hold no unread bytes, checked every drainGrace, or after
// drainMax when a child keeps writing.
const (
	drainGrace = 250 * time.Millisecond
	drainMax   = 10 * time.Second
)

const readChunk = 32 << 10

// startSpec is a validated Start request.
type startSpec struct {
	req     *process.StartRequest
	dir     string
	env     []string
	timeout time.Duration
	cred    *syscall.Credential // nil: the server's own identity
}

func (s *Server) buildSpec(ctx context.Context, req *process.StartRequest, timeout time.Duration) (*startSpec, error) {
	cfg := req.GetProcess()
	if cfg == nil || cfg.GetCmd() == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is required"))
	}
	cred, user, home := s.credential(ctx)
	dir := home
	if s.cfg.Workdir != "" {
		dir = s.cfg.Workdir
	}
	if cfg.Cwd != nil {
		d, err := s.resolvePath(ctx, cfg.GetCwd())
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		// Said here, since exec reports a missing working directory as a
		// missing program.
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cwd %s is not a directory in the sandbox", d))
		}
		dir = d
	}
	return &startSpec{req: req, dir: dir, env: s.processEnv(user, home, cfg.GetEnvs()), timeout: timeout, cred: cred}, nil
}

// processEnv layers PATH/HOME/USER/LOGNAME, the sandbox-global vars and the
// request's vars, later layers winning.
func (s *Server) processEnv(user, home string, reqEnv map[string]string) []string {
	env := map[string]string{
		"PATH":    s.pathEnv,
		"HOME":    home,
		"USER":    user,
		"LOGNAME": user,
		"SHELL":   s.cfg.Shell,
	}
	for k, v := range s.cfg.Env {
		env[k] = v
	}
	for k, v := range reqEnv {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		if k == "" || containsAny(k, "=\x00") || containsAny(v, "\x00") {
			continue
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// launch starts the process with sub already attached, so no output can
// be missed, and supervises it until its end event. With sub nil the
// output waits in the pending buffer from the first byte.
func (s *Server) launch(spec *startSpec, sub *subscriber) (*proc, error) {
	cfg := spec.req.GetProcess()
	cmd := exec.Command(cfg.GetCmd(), cfg.GetArgs()...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	p := &proc{
		tag:    spec.req.Tag,
		config: cfg,
		maxOut: s.cfg.MaxOutputBytes,
		cmd:    cmd,
		cred:   spec.cred,
		subs:   map[*subscriber]struct{}{},
		done:   make(chan struct{}),
	}
	if sub != nil {
		p.subs[sub] = struct{}{}
	}
	var readers []outputSource
	var err error
	if spec.req.Pty != nil {
		readers, err = startPTY(p, spec.req.GetPty().GetSize())
	} else {
		readers, err = startPipes(p, spec.req.Stdin == nil || spec.req.GetStdin())
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("start %q: %w", cfg.GetCmd(), err))
	}
	p.pid = uint32(cmd.Process.Pid)
	if err := s.procs.add(p); err != nil {
		_ = p.signal(sigKill)
		_ = cmd.Wait()
		for _, src := range readers {
			_ = src.f.Close()
		}
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	if !s.spawn(func() { s.supervise(p, readers, spec.timeout) }) {
		// Close won the race: reap here so the process is not left behind.
		_ = p.signal(sigKill)
		s.supervise(p, readers, 0)
	}
	return p, nil
}

// outputSource is one stream of process output and the file it comes from.
type outputSource struct {
	kind outKind
	f    *os.File
}

func startPipes(p *proc, withStdin bool) ([]outputSource, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, err
	}
	parentOnly := []*os.File{outR, errR}
	childOnly := []*os.File{outW, errW}
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	if withStdin {
		inR, inW, err := os.Pipe()
		if err != nil {
			closeAll(append(parentOnly, childOnly...)...)
			return nil, err
		}
		p.cmd.Stdin, p.stdin = inR, inW
		parentOnly = append(parentOnly, inW)
		childOnly = append(childOnly, inR)
	}
	// Its own process group, so a signal reaches the whole tree.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	err = p.cmd.Start()
	closeAll(childOnly...)
	if err != nil {
		closeAll(parentOnly...)
		p.stdin = nil
		return nil, err
	}
	return []outputSource{{outStdout, outR}, {outStderr, errR}}, nil
}

func startPTY(p *proc, size *process.PTY_Size) ([]outputSource, error) {
	// A new session with the PTY as controlling terminal: the process leads
	// its own process group, like a login on a real terminal.
	ptmx, err := pty.StartWithAttrs(p.cmd, winsize(size), &syscall.SysProcAttr{Setsid: true, Setctty: true, Credential: p.cred})
	if err != nil {
		return nil, err
	}
	p.ptmx = ptmx
	return []outputSource{{outPTY, ptmx}}, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// supervise pumps output, enforces the lifetime, reaps the process and
// publishes exactly one end event.
func (s *Server) supervise(p *proc, sources []outputSource, timeout time.Duration) {
	var readers sync.WaitGroup
	for _, src := range sources {
		readers.Add(1)
		go func() {
			defer readers.Done()
			pump(p, src)
		}()
	}
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() { _ = p.signal(sigKill) })
	}
	waitErr := p.cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	readersDone := make(chan struct{})
	go func() {
		readers.Wait()
		close(readersDone)
	}()
	awaitDrain(sources, readersDone)
	for _, src := range sources {
		_ = src.f.Close()
	}
	p.inMu.Lock()
	if p.stdin != nil {
		_ = p.stdin.Close()
		p.stdin = nil
	}
	p.inMu.Unlock()
	p.finish(endEvent(p.cmd.ProcessState, waitErr))
	s.procs.exitedNow(p)
}

// awaitDrain returns once the readers are done, closing the sources first
// when they stay open with nothing left to read (see drainGrace).
func awaitDrain(sources []outputSource, readersDone <-chan struct{}) {
	tick := time.NewTicker(drainGrace)
	defer tick.Stop()
	deadline := time.Now().Add(drainMax)
	for {
		select {
		case <-readersDone:
			return
		case now := <-tick.C:
			if now.Before(deadline) && anyUnread(sources) {
				continue
			}
			for _, src := range sources {
				_ = src.f.Close()
			}
			<-readersDone
			return
		}
	}
}

// anyUnread reports whether a source still holds bytes its reader has not
// taken (TIOCINQ, the same request as FIONREAD, for pipes and PTYs alike).
// It asks through SyscallConn, which leaves the descriptor in the
// runtime's poller (Fd would switch it to blocking mode under the reader).
func anyUnread(sources []outputSource) bool {
	for _, src := range sources {
		rc, err := src.f.SyscallConn()
		if err != nil {
			continue
		}
		n := 0
		_ = rc.Control(func(fd uintptr) {
			n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		})
		if n > 0 {
			return true
		}
	}
	return false
}

// pump copies one output stream into events until EOF (or EIO on a PTY
// whose last slave closed); it keeps draining the pipe even while output
// is being dropped, so the process never blocks on a reader.
func pump(p *proc, src outputSource) {
	buf := make([]byte, readChunk)
	for {
		n, err := src.f.Read(buf)
		if n > 0 {
			p.publish(src.kind, buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
				p.publish(outStderr, fmt.Appendf(nil, "\n[envd: reading output failed: %v]\n", err))
			}
			return
		}
	}
}

func endEvent(ps *os.ProcessState, waitErr error) *process.ProcessEvent {
	end := &process.ProcessEvent_EndEvent{ExitCode: -1, Status: "unknown"}
	if ps != nil {
		end.ExitCode = int32(ps.ExitCode())
		end.Exited = ps.Exited()
		end.Status = ps.String()
	}
	if waitErr != nil {
		msg := waitErr.Error()
		end.Error = &msg
	}
	return &process.ProcessEvent{Event: &process.ProcessEvent_End{End: end}}
}
