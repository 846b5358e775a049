package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestDomainError holds the translation of E2B's failures into the
// domain's kinds, on which the Manager decides (replace a gone sandbox,
// retry an unavailable provider, answer 404 for a missing file).
func TestDomainError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cause error
		want  error
	}{
		{e2b.ErrSandboxNotFound, session.ErrSandboxGone},
		{e2b.ErrNotFound, session.ErrNotFound},
		{e2b.ErrTimeout, session.ErrTimeout},
		{context.DeadlineExceeded, session.ErrTimeout},
		{e2b.ErrRateLimited, session.ErrLimit},
		{e2b.ErrPermissionDenied, session.ErrForbidden},
		{e2b.ErrInvalidArgument, session.ErrInvalid},
		{e2b.ErrAlreadyExists, session.ErrConflict},
		{e2b.ErrConflict, session.ErrConflict},
		{e2b.ErrNotEnoughSpace, session.ErrTooLarge},
		// A bad E2B key is the service's fault, not the caller's.
		{e2b.ErrAuthentication, session.ErrUnavailable},
		{e2b.ErrUnavailable, session.ErrUnavailable},
		{errors.New("connection refused"), session.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.cause.Error(), func(t *testing.T) {
			t.Parallel()
			err := domainError("do it", fmt.Errorf("call: %w", tc.cause))
			if !errors.Is(err, tc.want) {
				t.Fatalf("domainError(%v) = %v, want %v", tc.cause, err, tc.want)
			}
			if !errors.Is(err, tc.cause) {
				t.Fatalf("domainError(%v) = %v lost its cause", tc.cause, err)
			}
		})
	}
	if err := domainError("do it", nil); err != nil {
		t.Fatalf("domainError(nil) = %v", err)
	}
	// A caller that gave up is no provider failure: no domain kind.
	if err := domainError("do it", context.Canceled); !errors.Is(err, context.Canceled) || errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("domainError(Canceled) = %v, want the cancellation alone", err)
	}
}
