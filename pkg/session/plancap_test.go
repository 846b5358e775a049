package session

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProviderTimeoutsWithinPlanCap: no timeout asked of the provider
// passes MaxSandboxLifetime (E2B answers 400 beyond its plan's), whatever
// the session's idle timeout, and a sandbox's lifetime ends early enough
// before the cap for the reaper to act first.
func TestProviderTimeoutsWithinPlanCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		idleSecs int
		lifetime time.Duration
	}{
		{"default idle timeout", 0, 58 * time.Minute},
		{"idle timeout of the whole cap", 3600, 58 * time.Minute},
		{"idle timeout near the cap", 3500, 58 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{MaxSandboxLifetime: time.Hour, ActivityWriteInterval: time.Second})
			ctx := context.Background()
			s := r.mustStart(t, ctx, testKey, StartOptions{IdleTimeoutSecs: tt.idleSecs})
			if got := s.LifetimeDeadline.Sub(s.SandboxStartedAt); got != tt.lifetime {
				t.Errorf("sandbox lifetime %s, want %s", got, tt.lifetime)
			}
			for range 5 {
				r.clock.Advance(10 * time.Minute)
				if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "1"}, nil); err != nil {
					t.Fatal(err)
				}
			}
			r.sbx.mu.Lock()
			defer r.sbx.mu.Unlock()
			for _, spec := range r.sbx.specs {
				if spec.Timeout > time.Hour || spec.Timeout <= 0 {
					t.Errorf("create asked for %s", spec.Timeout)
				}
			}
			for id, d := range r.sbx.timeout {
				if d > time.Hour {
					t.Errorf("sandbox %s: timeout %s past the plan's hour", id, d)
				}
			}
		})
	}
}

// TestTimeoutRefreshFailureInStatus: a failed refresh of the provider's
// timeout shows in the session's status, in words with no provider error
// in them, until a refresh works again.
func TestTimeoutRefreshFailureInStatus(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{ActivityWriteInterval: time.Second})
	ctx := context.Background()
	r.mustStart(t, ctx, testKey, StartOptions{})
	var failing atomic.Bool
	r.sbx.mu.Lock()
	r.sbx.fail = func(op, id string) error {
		if op == "SetTimeout" && failing.Load() {
			return &Error{Kind: ErrUnavailable, Detail: "set sandbox timeout: the sandbox provider is unavailable; try again",
				Err: errors.New("e2b: secret internal chain")}
		}
		return nil
	}
	r.sbx.mu.Unlock()
	for _, tt := range []struct {
		fail bool
		want string
	}{
		{true, "refreshing the sandbox's timeout failed"},
		{true, "refreshing the sandbox's timeout failed"},
		{false, ""},
	} {
		failing.Store(tt.fail)
		r.clock.Advance(2 * time.Second)
		if _, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		st, err := r.m.Status(ctx, testKey)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.TimeoutRefreshProblem, tt.want) || tt.want == "" && st.TimeoutRefreshProblem != "" ||
			strings.Contains(st.TimeoutRefreshProblem, "secret") {
			t.Fatalf("refresh failing %v: status says %q", tt.fail, st.TimeoutRefreshProblem)
		}
	}
}
