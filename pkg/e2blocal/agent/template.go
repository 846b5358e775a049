//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/envd"
)

// readyInterval is how often a template's ready command is retried.
const readyInterval = 100 * time.Millisecond

// startTemplate makes the template's workdir, starts its start command and
// waits for its ready command, before the agent reports readiness: E2B
// hands out a template's sandbox with its start command running and ready.
// The runtime bounds the wait with its start timeout; the last failure of
// the ready command goes to the agent's stderr, which the runtime reports.
func startTemplate(ctx context.Context, cfg Config, srv *envd.Server) error {
	t := cfg.Template
	if err := makeWorkdir(cfg); err != nil {
		return err
	}
	if t.StartCmd != "" {
		if _, err := srv.StartCommand(t.User, t.StartCmd, "", nil); err != nil {
			return err
		}
	}
	if t.ReadyCmd == "" {
		return nil
	}
	last := ""
	for {
		err := srv.CheckReady(ctx, t.User, t.ReadyCmd, "", nil)
		if err == nil {
			return nil
		}
		// Each new failure once: the runtime keeps only the output's tail.
		if err.Error() != last {
			last = err.Error()
			fmt.Fprintln(os.Stderr, last)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(readyInterval):
		}
	}
}

// makeWorkdir makes a workdir the template's root filesystem lacks (one in
// the home, which starts empty), owned by the template's user.
func makeWorkdir(cfg Config) error {
	dir := cfg.Template.Workdir
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("template workdir: %w", err)
	}
	if cfg.WithRoot && cfg.Template.User != "root" {
		if err := os.Chown(dir, UserID, UserID); err != nil {
			return fmt.Errorf("template workdir: %w", err)
		}
	}
	return nil
}
