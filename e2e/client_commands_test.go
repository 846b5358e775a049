package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// TestClientCommands drives every command method of the Go client against
// the local service: a foreground command in JSON and streamed, a timeout,
// and a background command listed, read back, reattached to and killed.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := client.New(s.url, s.alice, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const sid = "client-cmds"

	res, err := c.RunCommand(ctx, sid, client.CommandRequest{Cmd: "echo \"$X\"; echo e >&2; exit 2", Envs: map[string]string{"X": "x1"}, Cwd: "/tmp"}, nil)
	if err != nil || res.ExitCode != 2 || res.Stdout != "x1\n" || res.Stderr != "e\n" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	var mu sync.Mutex
	var live strings.Builder
	res, err = c.RunCommand(ctx, sid, client.CommandRequest{Cmd: "echo a; sleep 30", TimeoutSecs: 1}, func(e session.Event) {
		mu.Lock()
		defer mu.Unlock()
		live.WriteString(e.Stdout)
	})
	if err != nil || !res.TimedOut || res.Stdout != "a\n" || live.String() != "a\n" || res.Error == nil {
		t.Fatalf("streamed timeout = %+v, %v, live %q", res, err, live.String())
	}

	started, err := c.StartCommand(ctx, sid, client.CommandRequest{Cmd: "sleep 600"})
	if err != nil || started.CommandID == "" {
		t.Fatalf("start = %+v, %v", started, err)
	}
	list, err := c.Commands(ctx, sid)
	if err != nil || len(list) != 1 || list[0].CommandID != started.CommandID || list[0].Cmd != "sleep 600" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	st, err := c.CommandStatus(ctx, sid, started.CommandID)
	if err != nil || !st.Running || st.PID != started.PID {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if err := c.KillCommand(ctx, sid, started.CommandID); err != nil {
		t.Fatal(err)
	}
	end, err := c.AttachCommand(ctx, sid, started.CommandID, nil)
	if err != nil || end.ExitCode == 0 || end.CommandID != started.CommandID {
		t.Fatalf("attach after kill = %+v, %v", end, err)
	}
	var p *client.Problem
	if err := c.KillCommand(ctx, sid, started.CommandID); !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Fatalf("second kill: %v", err)
	}
}
