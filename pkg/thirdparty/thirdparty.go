// Package thirdparty starts stand-ins for AWS services that were written
// elsewhere — dynalite for DynamoDB (npm, installed by scripts/setup.sh) and
// versitygw for S3 (a Go tool pinned in tools/go.mod, its own module so its
// dependencies stay out of the product's, and built by scripts/setup.sh into
// bin/tools/versitygw) — on loopback for tests, so
// the adapters are checked against parts nobody here wrote, beside the
// in-process stand-ins of pkg/localaws. versitygw verifies SigV4 signatures,
// presigned URLs included, their expiry and signed content length, as S3
// does; the in-process S3 stand-in checks none of them.
package thirdparty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Region and root credentials of the versitygw started here.
const (
	Region          = "us-east-1"
	AccessKeyID     = "sessionbox-test"
	SecretAccessKey = "sessionbox-test-secret"
)

// S3 is a running versitygw.
type S3 struct {
	// Endpoint is its base URL, e.g. http://127.0.0.1:40123.
	Endpoint string
}

// Client is an SDK client of the gateway, path-style, signing with its root
// credentials; optFns adjust it further.
func (s *S3) Client(optFns ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
	}, optFns...)
}

// VersityGW starts versitygw with a posix backend in a temporary directory
// for the test and stops it at cleanup. The binary is the one `make setup`
// built (or $SESSIONBOX_VERSITYGW): building it here would spend minutes of
// the test's deadline on a fresh machine. Without it the test fails, naming
// `make setup`, except under -short outside CI, where it is skipped so the
// fast loop runs on a fresh clone; `make test` runs setup first and no -short.
func VersityGW(t testing.TB) *S3 {
	t.Helper()
	bin, err := versityBinary()
	if err != nil {
		if testing.Short() && os.Getenv("CI") == "" {
			t.Skipf("versitygw: %v", err)
		}
		t.Fatalf("versitygw: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "--port", addr, "--access", AccessKeyID, "--secret", SecretAccessKey,
		"--region", Region, "--quiet", "posix", t.TempDir())
	cmd.Stdout, cmd.Stderr = logs, logs
	start(t, "versitygw", cmd, addr, logs)
	return &S3{Endpoint: "http://" + addr}
}

// Dynalite starts dynalite for the test and returns its endpoint. Without
// node or the npm package the test is skipped on a developer machine but
// fails under CI (CI set), where scripts/setup.sh must have installed it.
func Dynalite(t testing.TB) string {
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
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logs := &lockedBuffer{}
	cmd := exec.Command("node", cli, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Stdout, cmd.Stderr = logs, logs
	start(t, "dynalite", cmd, addr, logs)
	return "http://" + addr
}

// start runs cmd until the test's cleanup and waits for it to listen on
// addr; its output is shown when the test fails.
func start(t testing.TB, name string, cmd *exec.Cmd, addr string, logs *lockedBuffer) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() && logs.Len() > 0 {
			t.Logf("%s output:\n%s", name, logs.String())
		}
	})
	if err := waitListening(addr, exited, 30*time.Second); err != nil {
		t.Fatalf("%s did not come up: %v\n%s", name, err, logs.String())
	}
}

// VersityEnv names a versitygw binary to use instead of the one setup built.
const VersityEnv = "SESSIONBOX_VERSITYGW"

// versityBinary is $SESSIONBOX_VERSITYGW or bin/tools/versitygw under the
// repository root, whichever is set first, checked to exist.
func versityBinary() (string, error) {
	bin := os.Getenv(VersityEnv)
	if bin == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, "bin", "tools", "versitygw")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: run `make setup` (scripts/setup.sh builds it from tools/go.mod) or set %s", err, VersityEnv)
	}
	return bin, nil
}

// dynaliteCLI finds scripts/node_modules/dynalite/cli.js under the
// repository root and checks that node is there to run it.
func dynaliteCLI() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cli := filepath.Join(root, "scripts", "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", err
	}
	return cli, nil
}

// repoRoot is the nearest directory above the working directory holding
// go.mod: a test runs in its package's directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod) not found")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening polls addr until it accepts a connection, the process
// exits or limit passes.
func waitListening(addr string, exited <-chan struct{}, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-exited:
			return errors.New("exited")
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lockedBuffer collects a process's output while tests read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
