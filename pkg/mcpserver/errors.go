package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// refused is an error result for input the tool would not take.
func refused(reason string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: reason}}}
}

// failure turns a backend error into an error result a model can act on:
// the domain's detail (or the API's, through the client), with a hint of
// what to do. Unexpected failures are logged and described generically, so
// no internal error chain reaches the model.
func (t *tools) failure(ctx context.Context, tool, sessionID string, err error) *mcp.CallToolResult {
	msg, expected := describe(err)
	if !expected {
		t.opts.Logger.ErrorContext(ctx, "MCP tool failed", slog.String("tool", tool),
			slog.String("sessionId", sessionID), slog.String("error", err.Error()))
	}
	return refused(msg)
}

// timedOut describes a call that ran past its time limit.
const timedOut = "The code did not finish within its time limit and was interrupted; make it faster, run it in parts, " +
	"or pass a larger timeoutSecs. Variables from earlier calls may be gone if the kernel had to be restarted."

// hints follow a failure's detail, by kind; expected says the failure is
// the caller's input, a limit or the provider's trouble rather than a bug.
// Errors from the Go client (`sessionbox mcp`) are of the same kinds as the
// Manager's (pkg/problem), so one list serves both.
var hints = []struct {
	kind     error
	hint     string
	expected bool
}{
	{session.ErrInvalid, "Fix the input and call again.", true},
	{session.ErrNotFound, "Check the path with list_files; a session whose sandbox has not started yet has no files until execute_python or write_file starts it.", true},
	{session.ErrForbidden, "The sandbox user may not do that; use a path under /home/user.", true},
	{session.ErrConflict, "Something else changed the session at the same time; call again.", true},
	{session.ErrTooLarge, "Send or read less at once, e.g. in parts with execute_python.", true},
	{session.ErrLimit, "A limit was reached; wait a little and call again.", true},
	{session.ErrSandboxGone, "The sandbox went away; call again to start a fresh one (variables are lost).", true},
	{session.ErrUnavailable, "The sandbox service had trouble; call again.", false},
}

// describe returns a failure's message and whether it is an expected one.
func describe(err error) (string, bool) {
	switch {
	case errors.Is(err, context.Canceled):
		return "The call was cancelled before it finished.", true
	case errors.Is(err, session.ErrTimeout):
		// The sandbox's own wording ("run code") means nothing to a model.
		return timedOut, true
	}
	var detail string
	if se := (*session.Error)(nil); errors.As(err, &se) && se.Detail != "" {
		detail = strings.TrimRight(se.Detail, ".") + ". "
	}
	for _, h := range hints {
		if errors.Is(err, h.kind) {
			return detail + h.hint, h.expected
		}
	}
	if detail != "" {
		return strings.TrimSpace(detail), true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "The call did not finish in time; try something smaller.", true
	}
	return "sessionbox could not complete the call; try again, and if it keeps failing, tell the user.", false
}
