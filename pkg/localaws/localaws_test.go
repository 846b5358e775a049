package localaws_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

func TestDynamoDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	endpoint, stop, err := localaws.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %s is not on loopback", endpoint)
	}
	db := localaws.DynamoDBClient(endpoint)
	localaws.CreateTestTable(t, db)
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "n": &types.AttributeValueMemberN{Value: "7"}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": item["pk"]}})
	if err != nil || out.Item["n"].(*types.AttributeValueMemberN).Value != "7" {
		t.Fatalf("GetItem: %v, %v", out, err)
	}
	stop()
	// One attempt: the SDK would retry a refused connection with backoff.
	once := func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": item["pk"]}}, once); err == nil {
		t.Fatal("the stopped server still answers")
	}
}

// TestStopsWithContext checks that ending the context stops a server.
func TestStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	endpoint, stop, err := localaws.StartS3(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cancel()
	client := localaws.S3Client(endpoint, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	for range 100 {
		if _, err := client.ListBuckets(t.Context(), &s3.ListBucketsInput{}); err != nil {
			return
		}
	}
	t.Fatal("the server still answers after its context ended")
}

func TestS3(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	endpoint, stop, err := localaws.StartS3(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	client := localaws.S3Client(endpoint)
	for range 2 { // the second call finds the bucket there
		if err := localaws.EnsureBucket(ctx, client, "bkt"); err != nil {
			t.Fatalf("EnsureBucket: %v", err)
		}
	}
	_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/x.txt"), Body: strings.NewReader("on disk")})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "buckets", "bkt", "dir", "x.txt"))
	if err != nil || string(onDisk) != "on disk" {
		t.Fatalf("object file: %q, %v", onDisk, err)
	}
	stop()

	// A new server on the same directory still has the object.
	endpoint, stop, err = localaws.StartS3(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client = localaws.S3Client(endpoint)
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/x.txt")})
	if err != nil {
		t.Fatalf("GetObject after restart: %v", err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(body) != "on disk" {
		t.Fatalf("after restart: %q", body)
	}
}

// TestS3Presigned checks that presigned URLs from S3Client point at the
// local server and work with plain HTTP from this machine.
func TestS3Presigned(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	endpoint, stop, err := localaws.StartS3(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := localaws.S3Client(endpoint)
	if err := localaws.EnsureBucket(ctx, client, "bkt"); err != nil {
		t.Fatal(err)
	}
	presign := s3.NewPresignClient(client)
	put, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("up load.txt"), ContentLength: aws.Int64(5)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(put.URL, endpoint+"/bkt/") {
		t.Fatalf("presigned URL %s is not path-style on %s", put.URL, endpoint)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, put.URL, strings.NewReader("hello"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("presigned PUT: %v %v", resp, err)
	}
	resp.Body.Close()
	get, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("up load.txt")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(get.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Fatalf("presigned GET: %s %q", resp.Status, body)
	}
}

func TestStartS3BadDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := localaws.StartS3(t.Context(), filepath.Join(file, "sub")); err == nil {
		t.Fatal("StartS3 under a regular file succeeded")
	}
}
