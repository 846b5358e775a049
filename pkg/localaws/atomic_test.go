package localaws_test

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

// atomicStand starts the stand-in on dir with object k holding "old".
func atomicStand(t *testing.T, dir string) *s3.Client {
	t.Helper()
	endpoint, stop, err := localaws.StartS3(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client := localaws.S3Client(endpoint, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err := localaws.EnsureBucket(t.Context(), client, "bkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("old")}); err != nil {
		t.Fatal(err)
	}
	return client
}

// startPartialPut sends a presigned PUT of key that declares size bytes
// and sends only the first half; closing the returned conn aborts it.
func startPartialPut(t *testing.T, client *s3.Client, key string, size int64) net.Conn {
	t.Helper()
	put, err := s3.NewPresignClient(client).PresignPutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), ContentLength: aws.Int64(size)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(put.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, size)
	_, _ = w.WriteString(strings.Repeat("n", int(size/2)))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return conn
}

func getObject(ctx context.Context, client *s3.Client, key string) (string, error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
	if err != nil {
		return "", err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return string(b), err
}

// waitStaged polls until the staging area holds n files.
func waitStaged(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, err := os.ReadDir(filepath.Join(dir, ".incoming"))
		if err == nil && len(entries) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("staging holds %d files, want %d (%v)", len(entries), n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestS3BrokenPutKeepsOldObject: an upload that breaks off or fails its
// digest leaves the object it would have replaced whole, and nothing of
// itself on disk.
func TestS3BrokenPutKeepsOldObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		put  func(t *testing.T, client *s3.Client)
	}{
		{"aborted mid-body", func(t *testing.T, client *s3.Client) {
			conn := startPartialPut(t, client, "k", 1<<20)
			_ = conn.Close()
		}},
		{"wrong Content-MD5", func(t *testing.T, client *s3.Client) {
			sum := md5.Sum([]byte("something else"))
			_, err := client.PutObject(t.Context(), &s3.PutObjectInput{
				Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("new content"),
				ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
			})
			if err == nil {
				t.Fatal("a PUT with a wrong Content-MD5 succeeded")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			client := atomicStand(t, dir)
			tc.put(t, client)
			waitStaged(t, dir, 0)
			got, err := getObject(t.Context(), client, "k")
			if err != nil || got != "old" {
				t.Fatalf("object after the broken PUT: %.40q (%d bytes), %v", got, len(got), err)
			}
			onDisk, err := os.ReadFile(filepath.Join(dir, "buckets", "bkt", "k"))
			if err != nil || string(onDisk) != "old" {
				t.Fatalf("object file: %.40q (%d bytes), %v", onDisk, len(onDisk), err)
			}
			list, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
			if err != nil || len(list.Contents) != 1 || aws.ToInt64(list.Contents[0].Size) != 3 {
				t.Fatalf("listing: %+v, %v", list, err)
			}
		})
	}
}

// TestS3StalledPutHoldsNoOneUp: an upload stalled mid-body is received
// aside, so reads and other uploads go on meanwhile.
func TestS3StalledPutHoldsNoOneUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	client := atomicStand(t, dir)
	conn := startPartialPut(t, client, "k", 1<<20)
	waitStaged(t, dir, 1) // the stalled body is being received
	// Well inside the 30 s a stalled body is kept waiting.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if got, err := getObject(ctx, client, "k"); err != nil || got != "old" {
		t.Fatalf("GET beside a stalled PUT: %q, %v", got, err)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("other"), Body: strings.NewReader("o")}); err != nil {
		t.Fatalf("PUT beside a stalled PUT: %v", err)
	}
	_ = conn.Close()
	waitStaged(t, dir, 0)
	if got, err := getObject(t.Context(), client, "k"); err != nil || got != "old" {
		t.Fatalf("after the stalled PUT broke off: %q, %v", got, err)
	}
}

// TestS3PutReplacesWhole: a complete PUT over an object replaces it, its
// size and ETag with it, and leaves nothing staged.
func TestS3PutReplacesWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	client := atomicStand(t, dir)
	body := strings.Repeat("new", 100000)
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	head, err := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	sum := md5.Sum([]byte(body))
	if err != nil || aws.ToInt64(head.ContentLength) != int64(len(body)) || strings.Trim(aws.ToString(head.ETag), `"`) != fmt.Sprintf("%x", sum) {
		t.Fatalf("head: %+v, %v", head, err)
	}
	if got, err := getObject(t.Context(), client, "k"); err != nil || got != body {
		t.Fatalf("GET: %d bytes, %v", len(got), err)
	}
	waitStaged(t, dir, 0)
	// A key whose name is taken by a directory fails before any byte
	// lands, as a direct write would.
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("d/x"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("d"), Body: strings.NewReader("y")}); err == nil {
		t.Fatal("an object over a directory of keys was stored")
	}
	waitStaged(t, dir, 0)
}
