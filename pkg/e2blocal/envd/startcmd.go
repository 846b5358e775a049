//go:build linux

package envd

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// Template commands. E2B runs a template's start command through the
// shell as the template's user, in its workdir, with its env vars, and
// keeps running its ready command until that exits 0 before the sandbox is
// handed out.

// StartCommandTag tags the start command's process in the process table,
// where commands.list shows it and commands.connect reaches it.
const StartCommandTag = "start_cmd"

// shellRequest runs line through the shell as the account user ("" the
// default user), in dir ("" its home) with envs.
func (s *Server) shellRequest(user, line, dir string, envs map[string]string) (*startSpec, error) {
	ctx := context.Background()
	if user != "" {
		ctx = context.WithValue(ctx, accountKey{}, user)
	}
	tag := StartCommandTag
	cfg := &process.ProcessConfig{Cmd: s.cfg.Shell, Args: []string{"-l", "-c", line}, Envs: envs}
	if dir != "" {
		cfg.Cwd = &dir
	}
	return s.buildSpec(ctx, &process.StartRequest{Process: cfg, Tag: &tag}, 0)
}

// StartCommand starts a template's start command in the background and
// returns its pid; its output waits in the process table for a reader.
func (s *Server) StartCommand(user, line, dir string, envs map[string]string) (uint32, error) {
	spec, err := s.shellRequest(user, line, dir, envs)
	if err != nil {
		return 0, fmt.Errorf("start command: %w", err)
	}
	p, err := s.launch(spec, nil)
	if err != nil {
		return 0, fmt.Errorf("start command: %w", err)
	}
	return p.pid, nil
}

// CheckReady runs a template's ready command once, outside the process
// table, and returns nil when it exits 0, else its error and output.
func (s *Server) CheckReady(ctx context.Context, user, line, dir string, envs map[string]string) error {
	spec, err := s.shellRequest(user, line, dir, envs)
	if err != nil {
		return fmt.Errorf("ready command: %w", err)
	}
	cfg := spec.req.GetProcess()
	cmd := exec.CommandContext(ctx, cfg.GetCmd(), cfg.GetArgs()...)
	cmd.Dir, cmd.Env = spec.dir, spec.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: spec.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ready command: %w (output: %q)", err, tail(out, 512))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
