package localaws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

// TestExpire: objects past their prefix's age go, younger ones and those
// under no rule stay, as with S3 lifecycle expiration.
func TestExpire(t *testing.T) {
	t.Parallel()
	_, client := s3Stand(t) // holds "k", under no rule
	for _, k := range []string{"transfers/a/data", "artifacts/b/plot.png", "runs/r/result.json"} {
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	rules := []localaws.ExpiryRule{{"transfers/", 24 * time.Hour}, {"artifacts/", 24 * time.Hour}, {"runs/", 7 * 24 * time.Hour}}
	cases := []struct {
		after   time.Duration
		deleted int
		left    []string
	}{
		{time.Hour, 0, []string{"artifacts/b/plot.png", "k", "runs/r/result.json", "transfers/a/data"}},
		{25 * time.Hour, 2, []string{"k", "runs/r/result.json"}},
		{8 * 24 * time.Hour, 1, []string{"k"}},
	}
	for _, c := range cases {
		n, err := localaws.Expire(t.Context(), client, "bkt", rules, time.Now().Add(c.after))
		if err != nil || n != c.deleted {
			t.Fatalf("after %s: deleted %d (%v), want %d", c.after, n, err, c.deleted)
		}
		out, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, o := range out.Contents {
			left = append(left, aws.ToString(o.Key))
		}
		if strings.Join(left, ",") != strings.Join(c.left, ",") {
			t.Fatalf("after %s: left %v, want %v", c.after, left, c.left)
		}
	}
}
