package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestStopDuringExecute: an execution whose sandbox goes away because the
// session was stopped meanwhile fails with ErrConflict saying so, and is
// not run again on a fresh sandbox; one whose sandbox vanished on its own
// still is.
func TestStopDuringExecute(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		stop     bool
		wantKind error
	}{
		{"stopped by a caller", true, ErrConflict},
		{"vanished on its own", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newRig(t, Config{})
			r.mustStart(t, ctx, testKey, StartOptions{})
			calls := 0
			r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
				calls++
				if calls > 1 {
					return &ExecResult{Success: true}, nil
				}
				if c.stop {
					if _, err := r.m.Stop(ctx, testKey); err != nil {
						return nil, err
					}
				}
				return nil, fmt.Errorf("stream of %s broke: %w", id, ErrSandboxGone)
			}
			res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x"}, nil)
			if c.wantKind == nil {
				if err != nil || !res.Restarted || calls != 2 {
					t.Fatalf("vanished sandbox: %v, %+v, %d calls", err, res, calls)
				}
				return
			}
			if !errors.Is(err, c.wantKind) || !strings.Contains(err.Error(), "the session was stopped") || calls != 1 {
				t.Fatalf("err = %v after %d calls, want %v saying the session was stopped", err, calls, c.wantKind)
			}
		})
	}
}
