package e2b

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// Sentinel errors classify failures. Every error returned by this package that
// comes from E2B is an *Error, which matches one or more of these with
// errors.Is, so callers can branch on the kind of failure without parsing text.
var (
	// ErrNotFound: the addressed resource (file, process, context, sandbox) does not exist.
	ErrNotFound = errors.New("e2b: not found")
	// ErrSandboxNotFound: the sandbox does not exist, was killed, timed out or is
	// paused (E2B answers 404 on the API and 502 on the sandbox URL). It also
	// matches ErrNotFound.
	ErrSandboxNotFound = errors.New("e2b: sandbox not found or not running")
	// ErrTimeout: the operation ran out of time (request timeout, command or
	// code execution timeout, or a context deadline).
	ErrTimeout = errors.New("e2b: timeout")
	// ErrRateLimited: E2B answered 429 (or resource_exhausted). The *Error
	// carries RetryAfter when the server sent one.
	ErrRateLimited = errors.New("e2b: rate limited")
	// ErrAuthentication: the API key or the sandbox access token was refused.
	ErrAuthentication = errors.New("e2b: authentication failed")
	// ErrPermissionDenied: the sandbox's user may not do this to the path
	// (envd's 403 or permission_denied), e.g. writing under /etc.
	ErrPermissionDenied = errors.New("e2b: permission denied")
	// ErrInvalidArgument: the request was malformed or refers to an invalid path.
	ErrInvalidArgument = errors.New("e2b: invalid argument")
	// ErrNotEnoughSpace: the sandbox disk is full (envd 507).
	ErrNotEnoughSpace = errors.New("e2b: not enough space")
	// ErrUnavailable: E2B or the sandbox is temporarily unavailable (503, 504,
	// a bad gateway that is not a missing sandbox, a reset connection).
	ErrUnavailable = errors.New("e2b: unavailable")
	// ErrConflict: the resource is in a state that does not allow the
	// operation, e.g. pausing a sandbox that is already paused (409).
	ErrConflict = errors.New("e2b: conflict")
	// ErrAlreadyExists: the resource exists already (e.g. MakeDir on an existing directory).
	ErrAlreadyExists = errors.New("e2b: already exists")
	// ErrOutputTooLarge: one message of a code execution's stream was longer
	// than the client agreed to hold in memory (see RunCodeOptions.MaxOutputBytes).
	ErrOutputTooLarge = errors.New("e2b: output too large")
	// ErrUnsupported: the sandbox's envd is too old for the operation, or
	// for this client at all; the sandbox's template needs a rebuild.
	ErrUnsupported = errors.New("e2b: not supported by the sandbox's envd")
)

// Error describes a failed E2B call. Use errors.Is with the sentinel errors
// above to classify it, and errors.As to read its fields.
type Error struct {
	// Op is the operation that failed, e.g. "sandboxes.kill" or "files.read".
	Op string
	// StatusCode is the HTTP status, 0 when no response was received.
	StatusCode int
	// Code is the machine-readable code when the server sent one: the
	// control plane's error_code, or the Connect code name for envd RPCs.
	Code string
	// Message is the server's human-readable message.
	Message string
	// SandboxID is the sandbox the call addressed, when there was one.
	SandboxID string
	// RetryAfter is how long the server asked the client to wait (429).
	RetryAfter time.Duration

	kinds []error
	err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("e2b: ")
	b.WriteString(e.Op)
	if e.SandboxID != "" {
		fmt.Fprintf(&b, " (sandbox %s)", e.SandboxID)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": status %d", e.StatusCode)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.err != nil {
		b.WriteString(": ")
		b.WriteString(e.err.Error())
	}
	return b.String()
}

// Unwrap exposes the underlying cause (a transport or context error) when there is one.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether e belongs to the class of the sentinel target.
func (e *Error) Is(target error) bool {
	for _, k := range e.kinds {
		if k == target {
			return true
		}
	}
	return false
}

// kindsForStatus classifies an HTTP status code the way the official SDKs do.
func kindsForStatus(status int) []error {
	switch status {
	case 400, 422:
		return []error{ErrInvalidArgument}
	case 401, 403:
		return []error{ErrAuthentication}
	case 404:
		return []error{ErrNotFound}
	case 408, 504:
		return []error{ErrTimeout, ErrUnavailable}
	case 409:
		return []error{ErrConflict}
	case 429:
		return []error{ErrRateLimited}
	case 502, 503:
		return []error{ErrUnavailable}
	case 507:
		return []error{ErrNotEnoughSpace}
	}
	return nil
}

// kindsForConnect classifies a Connect error code as the official SDKs do.
func kindsForConnect(code connect.Code) []error {
	switch code {
	case connect.CodeNotFound:
		return []error{ErrNotFound}
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return []error{ErrInvalidArgument}
	case connect.CodeUnauthenticated:
		return []error{ErrAuthentication}
	case connect.CodePermissionDenied:
		return []error{ErrPermissionDenied}
	case connect.CodeResourceExhausted:
		return []error{ErrRateLimited}
	case connect.CodeUnavailable:
		return []error{ErrUnavailable}
	case connect.CodeDeadlineExceeded:
		return []error{ErrTimeout}
	case connect.CodeAlreadyExists:
		return []error{ErrAlreadyExists}
	case connect.CodeAborted:
		return []error{ErrConflict}
	}
	return nil
}

// sandboxGone builds the error for a sandbox that the proxy or API does not know.
func sandboxGone(op, id string, status int, msg string) *Error {
	return &Error{Op: op, SandboxID: id, StatusCode: status, Message: msg,
		kinds: []error{ErrSandboxNotFound, ErrNotFound}}
}

// wrapErr turns any error from a call into an *Error tagged with op and the
// sandbox id, keeping errors that are already classified.
func wrapErr(op, sandboxID string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Op == "" {
			e.Op = op
		}
		if e.SandboxID == "" {
			e.SandboxID = sandboxID
		}
		return e
	}
	out := &Error{Op: op, SandboxID: sandboxID, err: err}
	var ce *connect.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		out.kinds = []error{ErrTimeout}
	case errors.Is(err, context.Canceled):
		// A plain cancellation is the caller's choice, not an E2B failure;
		// errors.Is(err, context.Canceled) still holds through Unwrap.
	case errors.As(err, &ce):
		out.Code = ce.Code().String()
		out.Message = ce.Message()
		out.err = nil
		if ce.Code() == connect.CodeCanceled || ce.Code() == connect.CodeDeadlineExceeded {
			out.err = ctxCause(err)
		}
		out.kinds = kindsForConnect(ce.Code())
	case isConnReset(err):
		out.kinds = []error{ErrUnavailable}
	}
	return out
}

// ctxCause keeps a context error reachable through Unwrap when connect
// reports a cancellation, so errors.Is(err, context.Canceled) works.
func ctxCause(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return nil
}

// CommandExitError is returned by Run and Wait when a command exits with a
// non-zero code. The full result is attached.
type CommandExitError struct {
	Result *CommandResult
}

func (e *CommandExitError) Error() string {
	msg := e.Result.Error
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.Result.ExitCode)
	}
	return "e2b: command failed: " + msg
}
