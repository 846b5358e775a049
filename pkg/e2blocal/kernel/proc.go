//go:build linux

package kernel

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed kernel.py
var kernelSource string

//go:embed kernel.js
var jsKernelSource string

// Compile writes the kernel's source into dir and has python compile it
// there, returning the .pyc for Config.Compiled. It runs the interpreter the
// kernels will run (the same file), so the bytecode's version matches.
func Compile(python, dir string) (string, error) {
	src, pyc := filepath.Join(dir, "kernel.py"), filepath.Join(dir, "kernel.pyc")
	if err := os.WriteFile(src, []byte(kernelSource), 0o644); err != nil {
		return "", fmt.Errorf("write kernel source: %w", err)
	}
	const script = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"
	if out, err := exec.Command(python, "-c", script, src, pyc).CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile kernel with %s: %w: %s", python, err, out)
	}
	if err := os.Chmod(pyc, 0o644); err != nil {
		return "", fmt.Errorf("compile kernel: %w", err)
	}
	return pyc, nil
}

// Frame types of the kernel pipe protocol (see kernel.py).
const (
	frameReady     = 'K'
	frameCount     = 'C'
	frameStdout    = 'O'
	frameStderr    = 'R'
	frameText      = 'T'
	frameMain      = 'M'
	frameDisplay   = 'D'
	frameError     = 'X'
	frameTruncated = 'W'
	frameFiles     = 'A'
	frameDone      = 'F'
	frameExecute   = 'E'
	// frameExecuteWatched is frameExecute for a kernel whose directory the
	// server watches: the kernel does not scan it around the cell.
	frameExecuteWatched = 'G'
	// frameOversize is synthesised by the reader for a frame it had to drop.
	frameOversize = '!'
)

// defaultMaxFrame bounds one frame from a kernel; user code controls the
// kernel, so a bigger frame is skipped rather than buffered.
const defaultMaxFrame = 64 << 20

type frame struct {
	typ  byte
	data []byte
	// more is set when the next frame's header was already read with this
	// one: the kernel wrote them together, so the reader need not flush yet.
	more bool
}

// proc is one running kernel process.
type proc struct {
	cmd  *exec.Cmd
	pid  int
	cmdW *os.File
	// probeW asks the kernel to write the frames it queued (a running
	// cell's count) at once.
	probeW *os.File
	frames chan frame
	quit   chan struct{}
	done   chan struct{}
	stderr *tailBuffer
	// noChanges is the kernel's last report of no changed files; only the
	// cell running on the kernel touches it.
	noChanges emptyReport
	dir       string // the kernel's working directory

	killOnce sync.Once
	mu       sync.Mutex
	exited   bool
	exitErr  error
	// watch tracks the files cells change below dir, made at the first
	// cell; watchTried is set once that was attempted.
	watch      *treeWatch
	watchTried bool
	// output holds the read ends of a node kernel's fd 1 and 2 (nil for
	// python's, which makes its own): what is left there when the kernel
	// dies is its last word.
	output *outputPipes
}

type procSpec struct {
	python   string // the interpreter: python, or node for javascript and typescript
	compiled string // kernel.py compiled for python; "" sends the source on stdin
	lang     string // the context's language: python, bash (kernel.py drives a shell), javascript or typescript (kernel.js)
	dir      string
	env      []string
	cap      int64
	maxFrame uint32
	cred     *syscall.Credential // nil: this process's identity
	scanOnly bool                // no watch of dir: the kernel scans it around each cell
	// typescript is the typescript package kernel.js strips types with; "" looks in the usual places.
	typescript string
}

// startProc launches a kernel and waits for its ready frame.
func startProc(ctx context.Context, spec procSpec, timeout time.Duration) (*proc, error) {
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("kernel command pipe: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		closeAll(cmdR, cmdW)
		return nil, fmt.Errorf("kernel event pipe: %w", err)
	}
	probeR, probeW, err := os.Pipe()
	if err != nil {
		closeAll(cmdR, cmdW, evR, evW)
		return nil, fmt.Errorf("kernel probe pipe: %w", err)
	}
	cmd := kernelCommand(spec)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	tail := &tailBuffer{max: 4096}
	cmd.Stdout = tail
	cmd.Stderr = tail
	cmd.ExtraFiles = []*os.File{cmdR, evW, probeR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: spec.cred}
	cmd.WaitDelay = time.Second
	var out *outputPipes
	if nodeLanguage(spec.lang) {
		if out, err = newOutputPipes(cmd); err != nil {
			closeAll(cmdR, cmdW, evR, evW, probeR, probeW)
			return nil, err
		}
	}
	err = cmd.Start()
	closeAll(cmdR, evW, probeR)
	out.started()
	if err != nil {
		closeAll(cmdW, evR, probeW)
		out.close()
		return nil, fmt.Errorf("start kernel %s: %w", spec.python, err)
	}
	p := &proc{
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		cmdW:   cmdW,
		probeW: probeW,
		dir:    spec.dir,
		// A kernel that scans needs no watch.
		watchTried: spec.scanOnly,
		frames:     make(chan frame, 256),
		quit:       make(chan struct{}),
		done:       make(chan struct{}),
		stderr:     tail,
		output:     out,
	}
	go p.readLoop(evR, spec.maxFrame)
	if err := p.awaitReady(ctx, timeout); err != nil {
		p.kill()
		<-p.done
		return nil, err
	}
	return p, nil
}

// kernelCommand is the kernel program for spec's language, its source on
// stdin unless it is compiled.
func kernelCommand(spec procSpec) *exec.Cmd {
	capArg := strconv.FormatInt(spec.cap, 10)
	if nodeLanguage(spec.lang) {
		// --expose-internals gives kernel.js Node's REPL transform of
		// top-level await (see kernel.js).
		args := []string{"--expose-internals", "-", capArg, spec.lang}
		if spec.typescript != "" {
			args = append(args, spec.typescript)
		}
		cmd := exec.Command(spec.python, args...)
		cmd.Stdin = strings.NewReader(jsKernelSource)
		return cmd
	}
	args := []string{"-", capArg}
	if spec.lang != "" && spec.lang != langPython {
		args = append(args, spec.lang)
	}
	if spec.compiled != "" {
		args[0] = spec.compiled
		return exec.Command(spec.python, args...)
	}
	cmd := exec.Command(spec.python, args...)
	cmd.Stdin = strings.NewReader(kernelSource)
	return cmd
}

func (p *proc) awaitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case f, ok := <-p.frames:
		if !ok {
			return fmt.Errorf("kernel exited during startup (%s): %s", p.exitStatus(), p.stderr.String())
		}
		if f.typ != frameReady {
			return fmt.Errorf("kernel sent frame %q before ready", f.typ)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("kernel not ready after %s: %s", timeout, p.stderr.String())
	case <-ctx.Done():
		return fmt.Errorf("waiting for kernel: %w", ctx.Err())
	}
}

// readLoop turns the event pipe into frames until the kernel goes away, then
// kills what is left of its process group and reaps it.
func (p *proc) readLoop(evR *os.File, maxFrame uint32) {
	defer close(p.done)
	defer close(p.frames)
	defer evR.Close()
	br := bufio.NewReaderSize(evR, 64<<10)
	var hdr [5]byte
	stopped := false
	deliver := func(f frame) {
		if stopped {
			return
		}
		select {
		case p.frames <- f:
		case <-p.quit:
			stopped = true
		}
	}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr[1:])
		if n > maxFrame {
			if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
				break
			}
			deliver(frame{typ: frameOversize, data: []byte(strconv.FormatUint(uint64(n), 10)), more: br.Buffered() >= len(hdr)})
			continue
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(br, buf); err != nil {
			break
		}
		deliver(frame{typ: hdr[0], data: buf, more: br.Buffered() >= len(hdr)})
	}
	p.kill()
	err := p.cmd.Wait()
	closeAll(p.cmdW, p.probeW)
	p.output.drainTo(p.stderr)
	p.output.close()
	p.mu.Lock()
	p.exited = true
	p.exitErr = err
	w := p.watch
	p.mu.Unlock()
	if w != nil {
		w.close()
	}
}

// treeWatch returns the watch of the kernel's working directory, made on
// first use; nil when there is none (inotify is out of instances, the
// tree is too big...): the kernel then scans the tree around each cell. A
// watch that broke during a cell (its event queue overflowed, the cell
// touched more files than a report holds) is made anew for the next one.
func (p *proc) treeWatch() *treeWatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch != nil && !p.exited && p.watch.isBroken() {
		p.watch.close()
		p.watch, p.watchTried = nil, false
	}
	if p.exited || p.watchTried {
		return p.watch
	}
	p.watchTried = true
	if w, err := newTreeWatch(p.dir); err == nil {
		p.watch = w
	}
	return p.watch
}

// send writes one command frame to the kernel.
func (p *proc) send(typ byte, parts ...[]byte) error {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	buf := make([]byte, 5, 5+n)
	buf[0] = typ
	binary.LittleEndian.PutUint32(buf[1:], uint32(n))
	for _, b := range parts {
		buf = append(buf, b...)
	}
	if _, err := p.cmdW.Write(buf); err != nil {
		return fmt.Errorf("write to kernel: %w", err)
	}
	return nil
}

// probe asks the kernel to write what it has queued, without waiting: a
// full pipe already holds a probe the kernel has yet to read.
func (p *proc) probe() {
	rc, err := p.probeW.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Write(func(fd uintptr) bool {
		_, _ = syscall.Write(int(fd), []byte{'P'})
		return true
	})
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// signal sends sig to the kernel's process group (the kernel and the commands it runs).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		_ = syscall.Kill(-p.pid, sig)
	}
}

func (p *proc) interrupt() { p.signal(syscall.SIGINT) }

// kill stops the kernel and everything it started; the reader goroutine reaps it.
func (p *proc) kill() {
	p.killOnce.Do(func() { close(p.quit) })
	p.signal(syscall.SIGKILL)
}

func (p *proc) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		return "running"
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return "exit status " + strconv.Itoa(ee.ExitCode())
	}
	if p.exitErr != nil {
		return p.exitErr.Error()
	}
	return "exit status 0"
}

// tailBuffer keeps the last max bytes written to it (the kernel's own diagnostics).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
