package e2b_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// TestCreateWithinPlanLimits holds the client to a runtime with E2B's Base
// plan limits: a burst of creates past the create rate all succeed, each
// waiting out E2B's Retry-After; a create past the concurrent sandboxes
// gives up with ErrRateLimited once its bounded wait is spent; a timeout
// past the maximum lifetime is E2B's 400.
func TestCreateWithinPlanLimits(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	e2btest.LocalOnly(t, "plan limits are the local runtime's config")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := e2blocal.Start(ctx, e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), APIKey: testAPIKey, Agent: e2btest.Agent(),
		CreateRate: 1, MaxSandboxes: 3, MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, err := e2b.New(e2b.Config{APIKey: testAPIKey, APIURL: rt.APIURL(), SandboxURL: rt.SandboxURL(),
		Retry: e2b.RetryPolicy{MaxRateLimitWait: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	for range 3 {
		sb, err := c.Create(ctx, e2b.CreateParams{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatalf("create within the rate's retries: %v", err)
		}
		defer func() { _ = c.Kill(context.Background(), sb.ID) }()
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("3 creates at 1/s took %s", took)
	}
	_, err = c.Create(ctx, e2b.CreateParams{Template: "base", Timeout: time.Minute})
	var e *e2b.Error
	if !errors.As(err, &e) || !errors.Is(err, e2b.ErrRateLimited) {
		t.Fatalf("create past the concurrent sandboxes: %v", err)
	}
	if _, err := c.Create(ctx, e2b.CreateParams{Template: "base", Timeout: time.Hour + time.Second}); !errors.Is(err, e2b.ErrInvalidArgument) {
		t.Fatalf("create past the max lifetime: %v", err)
	}
}
