package localaws_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

func startS3(t *testing.T) (*s3.Client, string) {
	t.Helper()
	dir := t.TempDir()
	endpoint, stop, err := localaws.StartS3(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client := localaws.S3Client(endpoint, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err := localaws.EnsureBucket(t.Context(), client, "bkt"); err != nil {
		t.Fatal(err)
	}
	return client, dir
}

func uploadPart(t *testing.T, c *s3.Client, key, id string, n int32, body []byte) string {
	t.Helper()
	out, err := c.UploadPart(t.Context(), &s3.UploadPartInput{
		Bucket: aws.String("bkt"), Key: aws.String(key), UploadId: aws.String(id),
		PartNumber: aws.Int32(n), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
	})
	if err != nil {
		t.Fatalf("UploadPart %d: %v", n, err)
	}
	return aws.ToString(out.ETag)
}

func initiate(t *testing.T, c *s3.Client, key string) string {
	t.Helper()
	out, err := c.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{
		Bucket: aws.String("bkt"), Key: aws.String(key), ContentType: aws.String("application/x-test"),
	})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	return aws.ToString(out.UploadId)
}

func completed(parts ...types.CompletedPart) *types.CompletedMultipartUpload {
	return &types.CompletedMultipartUpload{Parts: parts}
}

func cpart(n int32, etag string) types.CompletedPart {
	return types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(etag)}
}

// TestS3Multipart assembles an object from parts kept on disk, with a part
// uploaded twice (the last one counts), and checks what was stored.
func TestS3Multipart(t *testing.T) {
	t.Parallel()
	c, dir := startS3(t)
	ctx := t.Context()
	key := "big/obj ect.bin"
	id := initiate(t, c, key)
	p1 := bytes.Repeat([]byte("a"), 5<<20)
	p2 := bytes.Repeat([]byte("b"), 5<<20)
	uploadPart(t, c, key, id, 2, []byte("stale"))
	e1 := uploadPart(t, c, key, id, 1, p1)
	e2 := uploadPart(t, c, key, id, 2, p2)
	e3 := uploadPart(t, c, key, id, 3, []byte("tail"))
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String("bkt"), Key: aws.String(key), UploadId: aws.String(id),
		MultipartUpload: completed(cpart(1, e1), cpart(2, e2), cpart(3, e3)),
	})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if !strings.HasSuffix(aws.ToString(out.ETag), `-3"`) {
		t.Errorf("multipart ETag %s", aws.ToString(out.ETag))
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	defer got.Body.Close()
	body, _ := io.ReadAll(got.Body)
	want := slices.Concat(p1, p2, []byte("tail"))
	if sha256.Sum256(body) != sha256.Sum256(want) || aws.ToString(got.ContentType) != "application/x-test" {
		t.Fatalf("object: %d bytes (want %d), type %s", len(body), len(want), aws.ToString(got.ContentType))
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "multipart")); len(left) != 0 {
		t.Fatalf("parts left on disk: %v", left)
	}
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestS3MultipartRefusals(t *testing.T) {
	t.Parallel()
	c, _ := startS3(t)
	ctx := t.Context()
	id := initiate(t, c, "k")
	e1 := uploadPart(t, c, "k", id, 1, []byte("one"))
	e2 := uploadPart(t, c, "k", id, 2, []byte("two"))
	tests := []struct {
		name  string
		parts *types.CompletedMultipartUpload
		code  string
	}{
		{"wrong etag", completed(cpart(1, e2)), "InvalidPart"},
		{"missing part", completed(cpart(1, e1), cpart(3, e2)), "InvalidPart"},
		{"out of order", completed(cpart(2, e2), cpart(1, e1)), "InvalidPartOrder"},
	}
	for _, tc := range tests {
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: aws.String(id), MultipartUpload: tc.parts,
		})
		if apiCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: aws.String(id)}); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: aws.String(id), PartNumber: aws.Int32(3), Body: strings.NewReader("x")})
	if apiCode(err) != "NoSuchUpload" {
		t.Errorf("part after abort: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); err == nil {
		t.Error("an aborted upload left an object")
	}
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("nope"), Key: aws.String("k")})
	if apiCode(err) != "NoSuchBucket" {
		t.Errorf("upload into a missing bucket: %v", err)
	}
}
