package mcpserver

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// commandResult is a shell command's outcome for a model: notes (a
// replaced sandbox, a timeout, cut output), the exit code, stdout and
// stderr (the flags again in commandOutput). A timeout is an
// error result; a non-zero exit is not, since commands report with it
// (grep finding nothing, a test failing), but the text says it first.
func commandResult(res *session.CommandResult, maxOutput int) *mcp.CallToolResult {
	var text strings.Builder
	if res.Restarted {
		text.WriteString("Note: the sandbox was replaced: variables from earlier execute_python calls are gone.\n")
	}
	if res.TimedOut {
		text.WriteString("Note: the command did not finish within its time limit and was killed; the output below is what it printed until then. " +
			"Pass a larger timeoutSecs, or run it in the background from the shell (nohup ... &).\n")
	}
	if res.Truncated {
		fmt.Fprintf(&text, "Note: the output was cut: stdout and stderr keep at most %s each. Print less, or redirect output to a file.\n", byteSize(maxOutput))
	}
	if !res.TimedOut {
		fmt.Fprintf(&text, "exit code %d\n", res.ExitCode)
	}
	section(&text, "stdout", res.Stdout)
	section(&text, "stderr", res.Stderr)
	return &mcp.CallToolResult{
		IsError: res.TimedOut,
		Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}},
	}
}
