package e2b_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
)

// TestLocalNoLeaksWhenCallersCancel abandons every kind of streaming call
// half-way and checks that the process (client and in-process runtime
// together) returns to its goroutine count once the client is closed.
func TestLocalNoLeaksWhenCallersCancel(t *testing.T) {
	setup := newClient(t)
	sb := newSandbox(t, setup, e2b.CreateParams{Template: "code-interpreter-v1"})
	ctx := testCtx(t)
	if _, err := sb.Files().Write(ctx, "big.txt", strings.NewReader(strings.Repeat("x", 4<<20)), e2b.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.RunCode(ctx, "1", e2b.RunCodeOptions{}); err != nil { // warm the kernel
		t.Fatal(err)
	}
	setup.Close()
	before := e2b.Goroutines()

	c, err := e2b.New(target)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Attach(sb.ID, e2b.AttachParams{AccessToken: sb.AccessToken()})
	cancelled := func() (context.Context, context.CancelFunc) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		return cctx, cancel
	}

	cctx, cancel := cancelled()
	if _, err := h.Commands().Run(cctx, "sleep 30", e2b.CommandOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v", err)
	}
	cancel()
	cctx, cancel = cancelled()
	if _, err := h.RunCode(cctx, "import time\ntime.sleep(30)", e2b.RunCodeOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("runCode: %v", err)
	}
	cancel()
	bg, err := h.Commands().Start(ctx, "sleep 30", e2b.CommandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bg.Disconnect()
	if _, err := h.Commands().Kill(ctx, bg.PID); err != nil {
		t.Error(err)
	}
	rc, err := h.Files().Read(ctx, "big.txt", e2b.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = rc.Read(make([]byte, 10))
	rc.Close() // most of the file unread
	w, err := h.Files().Watch(ctx, ".", e2b.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	c.Close()

	// Server-side goroutines count too: a stream the client abandoned must
	// end on both sides. Other sandboxes' processes are not ours.
	e2b.WaitNoNewGoroutines(t, before, "os/exec.")
}
