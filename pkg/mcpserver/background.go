package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Background commands, for what outlives one call: a server, a watcher, a
// long build. A model starts one, reads what it printed since its last
// read (waiting a little for more, or for the end), and kills it, over the
// API's background commands; the output and the read position wait in the
// sandbox between reads (session.Manager.ReadCommand), never here.

const (
	// maxReadWaitSecs bounds how long read_command_output waits: a tool
	// call that blocks for minutes holds the model up.
	maxReadWaitSecs = 60
	// maxBackgroundSecs is the service's longest background command.
	maxBackgroundSecs = 24 * 3600
)

const (
	startCommandDescription = "Start a shell command line (bash) in the background in this session's sandbox and return its " +
		"commandId at once; it keeps running between calls (a server, a watcher, a long job). Read what it prints with " +
		"read_command_output and stop it with kill_command. timeoutSecs kills it after that long (default: no limit " +
		"while the sandbox lives). For a command that finishes quickly use run_command instead."
	readCommandDescription = "Read what a background command (start_command) printed since the last read, waiting up to " +
		"waitSecs (default 1) for it to end; returns at once when it has ended. The result says whether it is still " +
		"running, or its exit code. Each read returns only new output; nothing is lost between reads. The whole output " +
		"is kept in files in the sandbox (stdoutPath, stderrPath) for read_file when a read is cut."
	killCommandDescription = "Kill a background command (start_command) and everything it started."
)

// StartCommandInput is start_command's input.
type StartCommandInput struct {
	Cmd         string `json:"cmd" jsonschema:"the shell command line, run by bash -l -c"`
	Cwd         string `json:"cwd,omitempty" jsonschema:"working directory, absolute or relative to /home/user (default /home/user)"`
	TimeoutSecs int    `json:"timeoutSecs,omitempty" jsonschema:"seconds after which the command is killed (default 0: no limit)"`
}

// ReadCommandInput is read_command_output's input.
type ReadCommandInput struct {
	CommandID string `json:"commandId" jsonschema:"the id start_command returned"`
	WaitSecs  int    `json:"waitSecs,omitempty" jsonschema:"seconds to wait for more output or the command's end (default 1)"`
}

// KillCommandInput is kill_command's input.
type KillCommandInput struct {
	CommandID string `json:"commandId" jsonschema:"the id start_command returned"`
}

// StartCommandOutput is start_command's structured result.
type StartCommandOutput struct {
	CommandID string `json:"commandId" jsonschema:"the command's id, for read_command_output and kill_command"`
	PID       uint32 `json:"pid" jsonschema:"the command's process id in the sandbox"`
	Restarted bool   `json:"restarted" jsonschema:"the sandbox was replaced before the command started"`
}

// ReadCommandOutput is read_command_output's structured result; the text
// carries the output.
type ReadCommandOutput struct {
	Running    bool   `json:"running" jsonschema:"the command is still running"`
	ExitCode   *int   `json:"exitCode,omitempty" jsonschema:"the command's exit code, once it has ended (-1 when a signal ended it)"`
	Truncated  bool   `json:"truncated" jsonschema:"more output than one read returns waits for the next read"`
	StdoutPath string `json:"stdoutPath" jsonschema:"the sandbox file holding the command's whole stdout"`
	StderrPath string `json:"stderrPath" jsonschema:"the sandbox file holding the command's whole stderr"`
}

func (t *tools) registerBackground(s *mcp.Server, in map[string]*jsonschema.Schema) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "start_command",
		InputSchema: in["start_command"],
		Title:       "Start a background command",
		Description: startCommandDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.startCommand)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_command_output",
		InputSchema: in["read_command_output"],
		Title:       "Read a background command's output",
		Description: readCommandDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.readCommandOutput)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "kill_command",
		InputSchema: in["kill_command"],
		Title:       "Kill a background command",
		Description: killCommandDescription,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, t.killCommand)
}

func (t *tools) startCommand(ctx context.Context, _ *mcp.CallToolRequest, in StartCommandInput) (*mcp.CallToolResult, *StartCommandOutput, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	st, err := b.StartCommand(ctx, sid, session.CommandRequest{Cmd: in.Cmd, Cwd: in.Cwd, TimeoutSecs: in.TimeoutSecs, Background: true})
	if err != nil {
		return t.failure(ctx, "start_command", sid, err), nil, nil
	}
	var text strings.Builder
	if st.Restarted {
		text.WriteString("Note: the sandbox was replaced: variables from earlier execute_python calls are gone.\n")
	}
	fmt.Fprintf(&text, "Started command %s (pid %d) in the background. Read its output with read_command_output, stop it with kill_command.",
		st.CommandID, st.PID)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}},
		&StartCommandOutput{CommandID: st.CommandID, PID: st.PID, Restarted: st.Restarted}, nil
}

func (t *tools) readCommandOutput(ctx context.Context, _ *mcp.CallToolRequest, in ReadCommandInput) (*mcp.CallToolResult, *ReadCommandOutput, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	// The wait happens in the sandbox and the read cursor lives there:
	// nothing is lost when the wait ends, and nothing is kept here.
	wait := time.Duration(max(in.WaitSecs, 1)) * time.Second
	res, err := b.ReadCommand(ctx, sid, in.CommandID, wait)
	if err != nil {
		return t.failure(ctx, "read_command_output", sid, err), nil, nil
	}
	out := backgroundResult(res, t.opts.MaxOutputBytes)
	files := "the whole output is in " + res.StdoutPath + " and " + res.StderrPath +
		" in the sandbox: read parts with read_file (offset, length) or search it with run_command (grep)"
	clipText(out, t.opts.MaxTextBytes, files)
	sc := &ReadCommandOutput{Running: res.Running, ExitCode: res.ExitCode, Truncated: res.More,
		StdoutPath: res.StdoutPath, StderrPath: res.StderrPath}
	return out, sc, nil
}

// clipText bounds a result whose whole text is already in the sandbox,
// where says where.
func clipText(res *mcp.CallToolResult, max int, where string) {
	for i, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && len(tc.Text) > max {
			res.Content[i] = &mcp.TextContent{Text: clip(tc.Text, max, where)}
		}
	}
}

// backgroundResult is one read of a background command for a model: its
// state first, then the new output.
func backgroundResult(res *session.CommandOutput, maxOutput int) *mcp.CallToolResult {
	var text strings.Builder
	switch {
	case res.Running:
		fmt.Fprintf(&text, "command %s is still running\n", res.CommandID)
	case *res.ExitCode == -1:
		fmt.Fprintf(&text, "command %s has ended: a signal ended it (killed, or its timeoutSecs passed)\n", res.CommandID)
	default:
		fmt.Fprintf(&text, "command %s has ended: exit code %d\n", res.CommandID, *res.ExitCode)
	}
	if res.More {
		fmt.Fprintf(&text, "Note: one read returns at most %s of stdout and of stderr; more output waits for the next read "+
			"(the whole output is in %s and %s).\n", byteSize(maxOutput), res.StdoutPath, res.StderrPath)
	}
	if res.Stdout == "" && res.Stderr == "" {
		text.WriteString("(no new output)\n")
	}
	section(&text, "stdout", res.Stdout)
	section(&text, "stderr", res.Stderr)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}}}
}

func (t *tools) killCommand(ctx context.Context, _ *mcp.CallToolRequest, in KillCommandInput) (*mcp.CallToolResult, any, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	if err := b.KillCommand(ctx, sid, in.CommandID); err != nil {
		return t.failure(ctx, "kill_command", sid, err), nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Killed command " + in.CommandID + "."}}}, nil, nil
}
