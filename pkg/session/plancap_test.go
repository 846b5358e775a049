package session

import (
	"context"
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
