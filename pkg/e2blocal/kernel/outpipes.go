//go:build linux

package kernel

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// outputPipes are the pipes a node kernel has as fd 1 and 2, their read ends
// passed to it as fds 6 and 7. Node cannot dup2 as kernel.py does, so the
// server makes the pipes: the kernel reads them and gives what a command it
// ran wrote there to the running cell (see kernel.js), and its frames stay on
// fd 4. The server keeps the read ends too, only to take in what node wrote
// there before it died (a crash, a missing type stripper) for its error.
type outputPipes struct {
	outR, errR *os.File // kept by the server
	outW, errW *os.File // the kernel's fd 1 and 2, closed here once it started
}

func newOutputPipes(cmd *exec.Cmd) (*outputPipes, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("kernel stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("kernel stderr pipe: %w", err)
	}
	o := &outputPipes{outR: outR, errR: errR, outW: outW, errW: errW}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = append(cmd.ExtraFiles, outR, errR)
	return o, nil
}

// started drops the kernel's ends of the pipes once it holds them.
func (o *outputPipes) started() {
	if o != nil {
		closeAll(o.outW, o.errW)
	}
}

// drainTo copies what the pipes hold (bounded: a command that escaped the
// kernel's process group may still write) into w, without waiting.
func (o *outputPipes) drainTo(w io.Writer) {
	if o == nil {
		return
	}
	for _, f := range []*os.File{o.outR, o.errR} {
		fd := int(f.Fd())
		if err := syscall.SetNonblock(fd, true); err != nil {
			continue
		}
		buf := make([]byte, 4096)
		for range 16 {
			n, err := syscall.Read(fd, buf)
			if n <= 0 || err != nil {
				break
			}
			_, _ = w.Write(buf[:n])
		}
	}
}

func (o *outputPipes) close() {
	if o != nil {
		closeAll(o.outR, o.errR)
	}
}
