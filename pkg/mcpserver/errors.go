package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/client"
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

// hints follow a failure's detail, by kind.
var hints = []struct {
	kind   error
	status int
	hint   string
}{
	{session.ErrInvalid, http.StatusBadRequest, "Fix the input and call again."},
	{session.ErrNotFound, http.StatusNotFound, "Check the path with list_files; a session whose sandbox has not started yet has no files until execute_python or write_file starts it."},
	{session.ErrForbidden, http.StatusForbidden, "The sandbox user may not do that; use a path under /home/user."},
	{session.ErrConflict, http.StatusConflict, "Something else changed the session at the same time; call again."},
	{session.ErrTooLarge, http.StatusRequestEntityTooLarge, "Send or read less at once, e.g. in parts with execute_python."},
	{session.ErrLimit, http.StatusTooManyRequests, "A limit was reached; wait a little and call again."},
	{session.ErrUnavailable, http.StatusBadGateway, "The sandbox service had trouble; call again."},
	{session.ErrSandboxGone, 0, "The sandbox went away; call again to start a fresh one (variables are lost)."},
}

// describe returns a failure's message and whether it is an expected one
// (the caller's input, a limit, the provider's trouble) rather than a bug.
func describe(err error) (string, bool) {
	if errors.Is(err, context.Canceled) {
		return "The call was cancelled before it finished.", true
	}
	var p *client.Problem
	if errors.Is(err, session.ErrTimeout) || (errors.As(err, &p) && p.Status == http.StatusGatewayTimeout) {
		// The sandbox's own wording ("run code") means nothing to a model.
		return timedOut, true
	}
	var se *session.Error
	if errors.As(err, &se) && se.Detail != "" {
		for _, h := range hints {
			if errors.Is(err, h.kind) {
				return se.Detail + ". " + h.hint, h.status < 500
			}
		}
	}
	if errors.As(err, &p) {
		detail := p.Detail
		if detail == "" {
			detail = p.Title
		}
		for _, h := range hints {
			if h.status == p.Status {
				return detail + ". " + h.hint, true
			}
		}
		return detail + ".", true
	}
	for _, h := range hints {
		if errors.Is(err, h.kind) {
			return h.hint, h.status < 500
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "The call did not finish in time; try something smaller.", true
	}
	return "sessionbox could not complete the call; try again, and if it keeps failing, tell the user.", false
}
