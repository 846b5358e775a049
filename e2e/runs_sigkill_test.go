package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestRunsSurviveServeKilled accepts runs (202), kills serve with SIGKILL
// while four of them run and six wait in the queue, and starts serve again
// on the same data dir: every accepted run ends. The queued ones run; the
// ones running at the kill end failed, saying why, and are not run twice.
func TestRunsSurviveServeKilled(t *testing.T) {
	t.Parallel()
	const key = "sbx_runsigkill0123456789abcdef"
	serve := newServeProc(t, key)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := client.New(serve.URL(), key, nil)

	serve.start(t)
	var running, queued []string
	for i := range 4 { // local mode's four run workers, all busy
		acc, err := c.SubmitRun(ctx, fmt.Sprintf("long-%d", i), client.RunRequest{Code: "import time\ntime.sleep(600)", TimeoutSecs: 900})
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, acc.RunID)
	}
	for _, id := range running {
		testwait.Until(t, 2*time.Minute, func() error {
			r, err := c.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != session.RunRunning {
				return fmt.Errorf("run %s never started: %+v", id, r)
			}
			return nil
		})
	}
	for i := range 6 {
		acc, err := c.SubmitRun(ctx, "quick", client.RunRequest{Code: fmt.Sprintf("%d * 7", i)})
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, acc.RunID)
	}
	serve.kill(t)
	serve.start(t)
	lost := 0
	for _, id := range append(append([]string{}, running...), queued...) {
		r, err := c.WaitRun(ctx, id, 200*time.Millisecond)
		if err != nil {
			t.Errorf("run %s after the restart: %v", id, err)
			lost++
			continue
		}
		wantRunning := strings.HasPrefix(r.SessionID, "long-")
		switch {
		case wantRunning && (r.Status != session.RunFailed || !strings.Contains(r.Error, "service stopped")):
			t.Errorf("run %s, running at the kill: %s %q, want failed saying the service stopped", id, r.Status, r.Error)
		case !wantRunning && r.Status != session.RunSucceeded:
			t.Errorf("run %s, queued at the kill: %s %q, want succeeded", id, r.Status, r.Error)
		}
	}
	t.Logf("accepted runs lost at kill -9: %d of %d", lost, len(running)+len(queued))
}
