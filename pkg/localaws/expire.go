package localaws

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ExpiryRule is one lifecycle rule: objects under Prefix older than Age go.
type ExpiryRule struct {
	Prefix string
	Age    time.Duration
}

// Expire deletes the objects of bucket that a rule says have expired at
// now, as S3's lifecycle expiration does for the production bucket, and
// returns how many it deleted. Objects under no rule stay.
func Expire(ctx context.Context, client *s3.Client, bucket string, rules []ExpiryRule, now time.Time) (int, error) {
	deleted := 0
	for _, rule := range rules {
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(rule.Prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return deleted, fmt.Errorf("localaws: list %s: %w", rule.Prefix, err)
			}
			for _, o := range page.Contents {
				if o.LastModified == nil || now.Sub(*o.LastModified) < rule.Age || !strings.HasPrefix(aws.ToString(o.Key), rule.Prefix) {
					continue
				}
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
					return deleted, fmt.Errorf("localaws: expire %s: %w", aws.ToString(o.Key), err)
				}
				deleted++
			}
		}
	}
	return deleted, nil
}
