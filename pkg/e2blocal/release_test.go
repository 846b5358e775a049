//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestUIDKeptUntilTreeIsGone tears down a sandbox whose tree outlives the
// teardown's deadline (its exit is held back by a gate) and checks the uid
// stays leased and the home stays until the tree is gone.
func TestUIDKeptUntilTreeIsGone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("per-sandbox uids are leased only by a root runtime")
	}
	rt := startRuntime(t, Config{WarmPool: -1})
	s, err := rt.prepare(false, false)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	real := s.proc
	gate, gated := make(chan struct{}), make(chan struct{})
	go func() {
		<-real.Done
		<-gate
		close(gated)
	}()
	s.proc = &jail.AgentProc{Cmd: real.Cmd, Stderr: real.Stderr, CfgW: real.CfgW, ReadyR: real.ReadyR, Done: gated}
	lockFile := filepath.Join(rt.uids.LockDir, strconv.Itoa(s.hostUID))
	home := rt.fs.HomeDir(s.hostKey)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.teardown(ctx); err == nil {
		t.Fatal("teardown reported success while the tree was still there")
	}
	if !uidLocked(t, lockFile) {
		t.Fatal("uid released while the tree may still run")
	}
	if _, err := os.Stat(home); err != nil {
		t.Fatalf("home removed while the tree may still run: %v", err)
	}

	close(gate)
	// Our own lease is what must go: once released, another runtime (other
	// test packages run beside this one) may lease the same uid at once, so
	// probing the lock file could not tell.
	deadline := time.Now().Add(20 * time.Second)
	for !s.uid.Released.Load() || exists(home) {
		if time.Now().After(deadline) {
			t.Fatalf("lease released %v, home present %v after the tree exited", s.uid.Released.Load(), exists(home))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uidLocked reports whether some lease holds the uid's lock file.
func uidLocked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open uid lock: %v", err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err != nil {
		t.Fatalf("flock: %v", err)
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
