//go:build linux

package envd

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

func TestConcurrentStarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.proc()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := runStart(t, testCtx(t), c, sh(fmt.Sprintf("echo %d", i)))
			switch {
			case err != nil:
				errs <- err
			case r.stdout != fmt.Sprintf("%d\n", i) || r.end == nil:
				errs <- fmt.Errorf("process %d: %q %v", i, r.stdout, r.end)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// After Close every goroutine the server started is gone: processes,
// output pumps, watchers and streams.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	// Not parallel: it counts every goroutine of the process.
	base := runtime.NumGoroutine()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	client := &http.Client{Transport: &http.Transport{}}
	pc := processconnect.NewProcessClient(client, hs.URL)
	fc := filesystemconnect.NewFilesystemClient(client, hs.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mustRun(t, ctx, pc, sh("echo done"))
	req := startReq("sleep", "30")
	s, err := pc.Start(ctx, req)
	if err != nil || !s.Receive() {
		t.Fatalf("start: %v %v", err, s.Err())
	}
	ws, err := fc.WatchDir(ctx, connect.NewRequest(&filesystem.WatchDirRequest{Path: "w"}))
	if err != nil || !ws.Receive() {
		t.Fatalf("watch: %v", err)
	}
	if _, err := fc.CreateWatcher(ctx, connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "w"})); err != nil {
		t.Fatal(err)
	}
	detached, err := pc.Start(ctx, startReq("sleep", "30"))
	if err != nil || !detached.Receive() {
		t.Fatalf("start: %v", err)
	}
	_ = detached.Close()

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for s.Receive() {
	}
	for ws.Receive() {
	}
	_ = s.Close()
	_ = ws.Close()
	hs.Close()
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, started with %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = runStart(t, ctx, pc, startReq("true"))
	if err == nil {
		t.Errorf("Start after Close succeeded")
	}
}
