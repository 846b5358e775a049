package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// RateLimiter is session.RateLimiter over the store's table: one item per
// key and window ("RATE#<key>", "W#<window start>") whose counter a
// conditional UpdateItem raises while it is below the burst. Each request
// costs exactly one write (1 WCU; a refused one too), no read; the item
// expires with the table's TTL two windows later, so no item outlives its
// use by much and nothing scans.
type RateLimiter struct {
	db    *dynamodb.Client
	table string
	rate  session.RequestRate
}

// NewRateLimiter counts at rate in s's table.
func (s *Store) NewRateLimiter(rate session.RequestRate) *RateLimiter {
	return &RateLimiter{db: s.db, table: s.table, rate: rate.WithDefaults()}
}

const attrCount = "n"

// Take implements session.RateLimiter.
func (l *RateLimiter) Take(ctx context.Context, key string, now time.Time) (bool, time.Duration, error) {
	start, length := l.rate.Window(now)
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table),
		Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: "RATE#" + key},
			attrSK: &types.AttributeValueMemberS{Value: "W#" + strconv.FormatInt(start.Unix(), 10)},
		},
		UpdateExpression:    aws.String("ADD #n :one SET #exp = if_not_exists(#exp, :exp)"),
		ConditionExpression: aws.String("attribute_not_exists(#n) OR #n < :burst"),
		ExpressionAttributeNames: map[string]string{
			"#n": attrCount, "#exp": attrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":   &types.AttributeValueMemberN{Value: "1"},
			":burst": &types.AttributeValueMemberN{Value: strconv.Itoa(l.rate.Burst)},
			":exp":   &types.AttributeValueMemberN{Value: strconv.FormatInt(start.Add(2*length).Unix(), 10)},
		},
	})
	if err == nil {
		return true, 0, nil
	}
	if err = wrapErr("count a request of "+key, err); errors.Is(err, session.ErrConflict) {
		// The window's count is at the burst: the condition refused it.
		return false, start.Add(length).Sub(now), nil
	}
	return false, 0, err
}

var _ session.RateLimiter = (*RateLimiter)(nil)
