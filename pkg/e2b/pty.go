package e2b

import (
	"context"
	"maps"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// Pty runs interactive terminals in a sandbox.
type Pty struct{ sb *Sandbox }

// PtyOptions tune Create.
type PtyOptions struct {
	Cols, Rows uint32
	// OnData receives terminal output as it arrives.
	OnData func([]byte)
	Envs   map[string]string
	Cwd    string
	User   string
	// Timeout bounds the terminal's lifetime (see CommandOptions.Timeout).
	Timeout time.Duration
}

// Create starts an interactive login bash on a pseudo-terminal.
func (p *Pty) Create(ctx context.Context, opts PtyOptions) (*CommandHandle, error) {
	envs := map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
	maps.Copy(envs, opts.Envs)
	cols, rows := opts.Cols, opts.Rows
	if cols == 0 {
		cols = 80
	}
	if rows == 0 {
		rows = 24
	}
	msg := &process.StartRequest{
		Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}, Envs: envs, Cwd: optString(opts.Cwd)},
		Pty:     &process.PTY{Size: &process.PTY_Size{Cols: cols, Rows: rows}},
	}
	return p.sb.commands.start(ctx, "pty.create", msg, CommandOptions{User: opts.User, Timeout: opts.Timeout},
		outputSinks{pty: opts.OnData})
}

// SendInput writes keystrokes to the terminal.
func (p *Pty) SendInput(ctx context.Context, pid uint32, data []byte) error {
	_, err := p.sb.envd.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{
		Process: pidSelector(pid), Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: data}}}))
	return wrapErr("pty.sendInput", p.sb.ID, err)
}

// Resize changes the terminal size.
func (p *Pty) Resize(ctx context.Context, pid uint32, cols, rows uint32) error {
	_, err := p.sb.envd.proc.Update(ctx, connect.NewRequest(&process.UpdateRequest{
		Process: pidSelector(pid), Pty: &process.PTY{Size: &process.PTY_Size{Cols: cols, Rows: rows}}}))
	return wrapErr("pty.resize", p.sb.ID, err)
}

// Kill ends the terminal; false when it had already gone.
func (p *Pty) Kill(ctx context.Context, pid uint32) (bool, error) {
	return p.sb.commands.Kill(ctx, pid)
}
