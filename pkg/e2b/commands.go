package e2b

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// Commands runs processes in a sandbox through envd.
type Commands struct{ sb *Sandbox }

// CommandOptions tune Run and Start.
type CommandOptions struct {
	// Envs are added to the sandbox's environment for this command.
	Envs map[string]string
	// Cwd is the working directory; empty means the user's home.
	Cwd string
	// User runs the command as this user; empty means the sandbox default.
	User string
	// Timeout bounds the process's lifetime: envd kills it when it elapses,
	// even if the client has disconnected. Zero means DefaultCommandTimeout;
	// negative means no limit.
	Timeout time.Duration
	// Stdin keeps the process's stdin open for SendStdin.
	Stdin bool
	// Tag labels the process, e.g. to find it in List.
	Tag string
	// OnStdout and OnStderr receive output chunks as they arrive (raw bytes,
	// not split on lines). They run on the handle's reader goroutine.
	OnStdout func([]byte)
	OnStderr func([]byte)
	// KeepaliveInterval asks envd to send keepalives when idle (default 50s).
	KeepaliveInterval time.Duration
	// MaxOutputBytes overrides Config.MaxOutputBytes for this command: the
	// result and the handle keep the first MaxOutputBytes of stdout and of
	// stderr. Negative means no limit.
	MaxOutputBytes int
}

// CommandResult is the outcome of a finished command.
type CommandResult struct {
	ExitCode int
	Stdout   string
	Stderr   string
	// Error is envd's description of an abnormal end, e.g. "signal: killed".
	Error string
	// Status is the raw process state, e.g. "exit status 1".
	Status string
	// Truncated is set when Stdout or Stderr holds only the first part of
	// the output because it went past the output limit (Config.MaxOutputBytes).
	Truncated bool
}

// ProcessInfo describes a running process.
type ProcessInfo struct {
	PID  uint32
	Tag  string
	Cmd  string
	Args []string
	Envs map[string]string
	Cwd  string
}

// Run executes cmd with bash -l -c, waits for it and returns its result.
// A non-zero exit returns the result and a *CommandExitError. If ctx ends
// first the process is killed. Run is never retried.
func (c *Commands) Run(ctx context.Context, cmd string, opts CommandOptions) (*CommandResult, error) {
	h, err := c.Start(ctx, cmd, opts)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, h)
}

// wait waits for h's end, killing its process if ctx ends first.
func (c *Commands) wait(ctx context.Context, h *CommandHandle) (*CommandResult, error) {
	defer h.Disconnect()
	res, err := h.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = h.Kill(kctx) // best effort: the caller gave up on it
	}
	return res, err
}

// Exec runs the program argv[0] with argv[1:] directly, with no shell and
// so none of the user's login files, waits for it and returns its result
// as Run does. It is for the service's own helpers, which must not run
// what the sandbox's user put in ~/.profile.
func (c *Commands) Exec(ctx context.Context, argv []string, opts CommandOptions) (*CommandResult, error) {
	if len(argv) == 0 {
		return nil, errors.New("e2b: exec: no program")
	}
	h, err := c.start(ctx, "commands.start", &process.StartRequest{
		Process: &process.ProcessConfig{Cmd: argv[0], Args: argv[1:], Envs: opts.Envs, Cwd: optString(opts.Cwd)},
		Tag:     optString(opts.Tag),
	}, opts, outputSinks{stdout: opts.OnStdout, stderr: opts.OnStderr})
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, h)
}

// Start launches cmd with bash -l -c in the background and returns once
// envd reports its pid. Output is consumed by the handle until the process
// ends, ctx ends or Disconnect is called; the process itself keeps running
// when the client goes away (until its Timeout).
func (c *Commands) Start(ctx context.Context, cmd string, opts CommandOptions) (*CommandHandle, error) {
	return c.start(ctx, "commands.start", shellStart(cmd, opts), opts, outputSinks{stdout: opts.OnStdout, stderr: opts.OnStderr})
}

// shellStart is the request that runs cmd with bash -l -c.
func shellStart(cmd string, opts CommandOptions) *process.StartRequest {
	return &process.StartRequest{
		Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", cmd}, Envs: opts.Envs, Cwd: optString(opts.Cwd)},
		Stdin:   proto.Bool(opts.Stdin),
		Tag:     optString(opts.Tag),
	}
}

// DetachHeader asks envd to send a Start's caller the start event alone and
// keep all the output for the first Connect. The local runtime's envd
// honours it; E2B's ignores unknown headers and streams as ever.
const DetachHeader = "Sessionbox-Detach"

// StartDetached launches cmd as Start does but keeps no stream: it returns
// the pid once envd reports it. Output is left for Connect: the local
// runtime's envd keeps all of it, first bytes included (see DetachHeader),
// where a Start followed by Disconnect would lose what was streamed before
// the disconnect; E2B's envd streams it to this call, which drops it, and
// keeps nothing for a later Connect either way.
func (c *Commands) StartDetached(ctx context.Context, cmd string, opts CommandOptions) (uint32, error) {
	h, err := c.startWith(ctx, "commands.start", shellStart(cmd, opts), opts, outputSinks{}, http.Header{DetachHeader: {"true"}})
	if err != nil {
		return 0, err
	}
	h.Disconnect()
	return h.PID, nil
}

func (c *Commands) start(ctx context.Context, op string, msg *process.StartRequest, opts CommandOptions, sinks outputSinks) (*CommandHandle, error) {
	return c.startWith(ctx, op, msg, opts, sinks, nil)
}

// startWith is start with extra request headers.
func (c *Commands) startWith(ctx context.Context, op string, msg *process.StartRequest, opts CommandOptions, sinks outputSinks, extra http.Header) (*CommandHandle, error) {
	streamCtx, cancel := c.sb.client.streamContext(ctx, commandTimeout(opts.Timeout))
	req := connect.NewRequest(msg)
	for k, v := range extra {
		req.Header()[k] = v
	}
	basicUser(req.Header(), c.sb.user(opts.User))
	req.Header().Set("Keepalive-Ping-Interval", keepaliveHeader(opts.KeepaliveInterval))
	timer := c.sb.client.startStreamTimer(cancel)
	stream, err := c.sb.envd.proc.Start(streamCtx, req)
	if err != nil {
		return nil, failedStream(op, c.sb.ID, err, timer, cancel)
	}
	return newHandle(op, c.sb, streamAdapter[process.StartResponse]{stream}, timer, cancel, sinks,
		c.sb.client.outputLimit(opts.MaxOutputBytes))
}

// ConnectOptions tune Connect.
type ConnectOptions struct {
	OnStdout, OnStderr func([]byte)
	// OnPty receives terminal output when the process is a PTY.
	OnPty func([]byte)
	// Timeout bounds the process from now on (see CommandOptions.Timeout).
	Timeout time.Duration
	// MaxOutputBytes overrides Config.MaxOutputBytes (see CommandOptions).
	MaxOutputBytes int
}

// Connect attaches to a running (or recently finished) process by pid and
// streams its remaining output.
func (c *Commands) Connect(ctx context.Context, pid uint32, opts ConnectOptions) (*CommandHandle, error) {
	return c.connect(ctx, pidSelector(pid), opts)
}

// ConnectTag is Connect for the process started with Tag tag: envd resolves
// the tag, so a pid reused by another process cannot be mistaken for it.
// A process with that tag still running wins over finished ones.
func (c *Commands) ConnectTag(ctx context.Context, tag string, opts ConnectOptions) (*CommandHandle, error) {
	return c.connect(ctx, tagSelector(tag), opts)
}

func (c *Commands) connect(ctx context.Context, sel *process.ProcessSelector, opts ConnectOptions) (*CommandHandle, error) {
	const op = "commands.connect"
	streamCtx, cancel := c.sb.client.streamContext(ctx, commandTimeout(opts.Timeout))
	req := connect.NewRequest(&process.ConnectRequest{Process: sel})
	req.Header().Set("Keepalive-Ping-Interval", keepaliveSeconds)
	timer := c.sb.client.startStreamTimer(cancel)
	stream, err := c.sb.envd.proc.Connect(streamCtx, req)
	if err != nil {
		return nil, failedStream(op, c.sb.ID, err, timer, cancel)
	}
	return newHandle(op, c.sb, streamAdapter[process.ConnectResponse]{stream}, timer, cancel,
		outputSinks{stdout: opts.OnStdout, stderr: opts.OnStderr, pty: opts.OnPty}, c.sb.client.outputLimit(opts.MaxOutputBytes))
}

// List returns the processes envd is running.
func (c *Commands) List(ctx context.Context) ([]ProcessInfo, error) {
	res, err := c.sb.envd.proc.List(ctx, connect.NewRequest(&process.ListRequest{}))
	if err != nil {
		return nil, wrapErr("commands.list", c.sb.ID, err)
	}
	out := make([]ProcessInfo, 0, len(res.Msg.GetProcesses()))
	for _, p := range res.Msg.GetProcesses() {
		cfg := p.GetConfig()
		out = append(out, ProcessInfo{PID: p.GetPid(), Tag: p.GetTag(), Cmd: cfg.GetCmd(),
			Args: cfg.GetArgs(), Envs: cfg.GetEnvs(), Cwd: cfg.GetCwd()})
	}
	return out, nil
}

// SendStdin writes data to the stdin of a process started with Stdin set.
func (c *Commands) SendStdin(ctx context.Context, pid uint32, data []byte) error {
	_, err := c.sb.envd.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{
		Process: pidSelector(pid), Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: data}}}))
	return wrapErr("commands.sendStdin", c.sb.ID, err)
}

// CloseStdin closes a process's stdin (EOF), needs envd >= 0.5.2.
func (c *Commands) CloseStdin(ctx context.Context, pid uint32) error {
	if err := c.sb.needEnvd("commands.closeStdin", envdCloseStdin); err != nil {
		return err
	}
	_, err := c.sb.envd.proc.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: pidSelector(pid)}))
	return wrapErr("commands.closeStdin", c.sb.ID, err)
}

// Kill sends SIGKILL to a process. It reports false when no such process exists.
func (c *Commands) Kill(ctx context.Context, pid uint32) (bool, error) {
	return c.kill(ctx, pidSelector(pid))
}

// KillTag sends SIGKILL to the running process started with Tag tag. It
// reports false when no running process has that tag.
func (c *Commands) KillTag(ctx context.Context, tag string) (bool, error) {
	return c.kill(ctx, tagSelector(tag))
}

func (c *Commands) kill(ctx context.Context, sel *process.ProcessSelector) (bool, error) {
	_, err := c.sb.envd.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{
		Process: sel, Signal: process.Signal_SIGNAL_SIGKILL}))
	if err != nil {
		if connect.CodeOf(err) == connect.CodeNotFound {
			return false, nil
		}
		return false, wrapErr("commands.kill", c.sb.ID, err)
	}
	return true, nil
}

func pidSelector(pid uint32) *process.ProcessSelector {
	return &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
}

func tagSelector(tag string) *process.ProcessSelector {
	return &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: tag}}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func commandTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultCommandTimeout
	}
	return d
}

// streamContext detaches a long-lived stream from the caller's deadline
// (whose value connect would send as the process lifetime) while still
// ending it when the caller's ctx ends. d > 0 sets the lifetime.
func (c *Client) streamContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d > 0 {
		sctx, cancel = withTimeoutCancel(sctx, cancel, d)
	}
	stop := context.AfterFunc(ctx, cancel)
	return sctx, func() { stop(); cancel() }
}

// failedStream releases a stream that failed to open and classifies the error.
func failedStream(op, id string, err error, timer *streamTimer, cancel context.CancelFunc) error {
	timer.stop()
	cancel()
	if timer.timedOut() {
		return timeoutErr(op, id, err)
	}
	return wrapErr(op, id, err)
}
