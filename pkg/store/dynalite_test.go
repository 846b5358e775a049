package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// startDynalite runs dynalite (npm, installed by scripts/setup.sh) on a free
// loopback port for the test and returns its endpoint. Without it the
// sub-suite is skipped on a developer machine, but fails under CI, where
// setup must have installed it.
func startDynalite(t *testing.T) string {
	t.Helper()
	cli, err := dynaliteCLI()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("dynalite is required in CI: %v (run scripts/setup.sh)", err)
		}
		t.Skipf("dynalite not installed (%v); run scripts/setup.sh", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", cli, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dynalite: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListening(t.Context(), addr, 15*time.Second); err != nil {
		t.Fatalf("dynalite did not come up: %v", err)
	}
	return "http://" + addr
}

// dynaliteCLI finds scripts/node_modules/dynalite/cli.js from the repository
// root (the nearest directory above the test's working directory holding
// go.mod) and checks that node is there to run it.
func dynaliteCLI() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod) not found")
		}
		dir = parent
	}
	cli := filepath.Join(dir, "scripts", "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", err
	}
	return cli, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(ctx context.Context, addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
