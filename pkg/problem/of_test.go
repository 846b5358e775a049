package problem_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestOfPrefersTheErrorsKind: an *session.Error is answered by its own
// kind, not by a kind of the error it wraps. A restore that failed because
// a command was refused (ErrForbidden, deep in the chain) is a 502 the
// caller may retry, not a 403.
func TestOfPrefersTheErrorsKind(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("run restore: %w", session.ErrForbidden)
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"kind over a forbidden cause", &session.Error{Kind: session.ErrUnavailable, Detail: "restore failed", Err: cause}, 502},
		{"wrapped again", fmt.Errorf("acquire: %w", &session.Error{Kind: session.ErrUnavailable, Err: cause}), 502},
		{"a plain chain", cause, 403},
		{"a kind of its own", &session.Error{Kind: session.ErrNotFound, Err: errors.New("x")}, 404},
	}
	for _, c := range cases {
		k, ok := problem.Of(c.err)
		if !ok || k.Status != c.want {
			t.Errorf("%s: %v %v, want status %d", c.name, k.Status, ok, c.want)
		}
	}
}
