package session

import (
	"context"
	"fmt"
	"testing"
)

// TestKernelRestarted: the result says kernel state is gone when the
// kernel died or was replaced during the execution, and when the sandbox
// was replaced; an ordinary error or success leaves it unset.
func TestKernelRestarted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		err     *ExecError
		lost    bool
		gone    bool
		want    bool
		wantRst bool
	}{
		{"success", nil, false, false, false, false},
		{"ordinary exception", &ExecError{Name: "ZeroDivisionError", Value: "division by zero"}, false, false, false, false},
		{"kernel died", &ExecError{Name: "DeadKernelError", Value: "The kernel died (killed); it is restarted for the next execution"}, false, false, true, false},
		{"timeout that restarted the kernel", &ExecError{Name: "TimeoutError", Value: "execution exceeded its timeout of 1 s; the kernel did not stop when interrupted and was restarted"}, true, false, true, false},
		{"timeout the kernel stopped at", &ExecError{Name: "TimeoutError", Value: "execution exceeded its timeout of 1 s and was interrupted"}, false, false, false, false},
		{"code's own TimeoutError naming a restart", &ExecError{Name: "TimeoutError", Value: "server restarted"}, false, false, false, false},
		{"sandbox replaced", nil, false, true, true, true},
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
				if c.gone && calls == 1 {
					return nil, fmt.Errorf("sandbox %s: %w", id, ErrSandboxGone)
				}
				return &ExecResult{Success: c.err == nil, Error: c.err, KernelLost: c.lost, ExecutionCount: 1}, nil
			}
			res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.KernelRestarted != c.want || res.Restarted != c.wantRst {
				t.Fatalf("kernelRestarted %v restarted %v, want %v and %v", res.KernelRestarted, res.Restarted, c.want, c.wantRst)
			}
		})
	}
}
