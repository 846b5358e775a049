package session

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the domain. Adapters wrap their own failures in these so
// callers can use errors.Is; pkg/problem gives each its problem type and
// HTTP status, which the API sends and the Go client maps back.
var (
	ErrNotFound     = errors.New("not found")                    // 404
	ErrGone         = errors.New("gone")                         // 410: it existed, in a sandbox since replaced
	ErrConflict     = errors.New("conflict")                     // 409: a concurrent write won
	ErrInvalid      = errors.New("invalid input")                // 400
	ErrTooLarge     = errors.New("too large")                    // 413
	ErrLimit        = errors.New("limit reached")                // 429
	ErrUnauthorized = errors.New("unauthorized")                 // 401
	ErrForbidden    = errors.New("forbidden")                    // 403
	ErrSandboxGone  = errors.New("sandbox is gone")              // the provider no longer has it
	ErrUnavailable  = errors.New("sandbox provider unavailable") // 502
	ErrTimeout      = errors.New("timed out")                    // 504
)

// Error is a domain error with a detail a caller can act on. Kind is one of
// the sentinels above; errors.Is(err, Kind) holds.
type Error struct {
	Kind   error
	Detail string
	// RetryAfter, when set, tells the caller when trying again may succeed.
	RetryAfter time.Duration
	Err        error // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Detail, e.Err)
	}
	return e.Detail
}

// Is makes errors.Is(err, ErrX) hold for an *Error of kind ErrX.
func (e *Error) Is(target error) bool { return e.Kind == target }

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of the given kind.
func Errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
