package blob_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/blob"
	"github.com/sessionbox/sessionbox/pkg/localaws"
)

// serverDirEnv turns the test binary into the S3 server of the benchmarks
// (see TestMain), so -benchmem counts the adapter's allocations and not
// the server's.
const serverDirEnv = "SESSIONBOX_BLOB_BENCH_S3_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serverDirEnv); dir != "" {
		os.Exit(runServer(dir))
	}
	os.Exit(m.Run())
}

// runServer serves the local S3 stand-in until stdin closes, announcing
// its endpoint on stdout.
func runServer(dir string) int {
	endpoint, stop, err := localaws.StartS3(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	fmt.Println(endpoint)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// serverProcess starts the S3 stand-in in a child process, keeping its
// data (its credentials among them) in dir.
func serverProcess(b *testing.B, dir string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("S3 server process: %v", err)
	}
	return strings.TrimSpace(line)
}

var benchSizes = []int64{24 << 20, 96 << 20}

func benchBlobs(b *testing.B) *blob.Blobs {
	dir := b.TempDir()
	endpoint := serverProcess(b, dir)
	creds, err := localaws.S3Credentials(dir)
	if err != nil {
		b.Fatal(err)
	}
	client := localaws.S3Client(endpoint, func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, "")
	})
	if err := localaws.EnsureBucket(b.Context(), client, bucket); err != nil {
		b.Fatal(err)
	}
	return blob.New(client, bucket)
}

// BenchmarkPut streams objects from a plain io.Reader; B/op stays flat as
// the object grows, which is the constant-memory claim.
func BenchmarkPut(b *testing.B) {
	blobs := benchBlobs(b)
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if err := blobs.Put(b.Context(), "bench/put", data(1, size), size, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen streams objects back through a 32 KiB buffer.
func BenchmarkOpen(b *testing.B) {
	blobs := benchBlobs(b)
	buf := make([]byte, 32<<10)
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			key := fmt.Sprintf("bench/open-%d", size)
			if err := blobs.Put(b.Context(), key, data(2, size), size, ""); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			for b.Loop() {
				body, _, err := blobs.Open(b.Context(), key)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, body, buf)
				body.Close()
				if err != nil || n != size {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
		})
	}
}
