package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// DueSessions returns up to limit live sessions whose DueAt is at or before
// t, earliest first. Every shard of the deadline index is queried (in
// order of dueAt, so each contributes at most limit) and the results merged.
func (s *Store) DueSessions(ctx context.Context, t time.Time, limit int) ([]*session.Session, error) {
	if limit <= 0 {
		return nil, session.Errorf(session.ErrInvalid, "store: due sessions: limit must be positive")
	}
	if err := checkContext(ctx, "due sessions"); err != nil {
		return nil, err
	}
	perShard := make([][]*session.Session, s.shards)
	badShard := make([][]string, s.shards)
	errs := make([]error, s.shards)
	var wg sync.WaitGroup
	for i := range s.shards {
		wg.Go(func() {
			perShard[i], badShard[i], errs[i] = s.dueInShard(ctx, fmt.Sprintf("DUE#%d", i), t, limit)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := slices.Concat(perShard...)
	slices.SortStableFunc(all, func(a, b *session.Session) int { return a.DueAt.Compare(b.DueAt) })
	if len(all) > limit {
		all = all[:limit]
	}
	// One damaged record must not stop the reaper for every session: the
	// readable ones come back, the others are named beside them.
	if bad := slices.Concat(badShard...); len(bad) > 0 {
		return all, &session.SkippedRecordsError{Op: "due sessions", Records: bad}
	}
	return all, nil
}

// dueInShard reads one shard's due sessions, earliest first. The index
// holds whole seconds; the exact due time is checked here, as are state and
// expiry, since the index is eventually consistent with the table.
func (s *Store) dueInShard(ctx context.Context, shard string, t time.Time, limit int) (got []*session.Session, bad []string, err error) {
	var start item
	for len(got) < limit {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexByDeadline),
			KeyConditionExpression:    aws.String("#shard = :shard AND #due <= :t"),
			ExpressionAttributeNames:  map[string]string{"#shard": attrDueShard, "#due": attrDueAt},
			ExpressionAttributeValues: item{":shard": str(shard), ":t": num(t.Unix())},
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(int32(limit - len(got))),
		})
		if err != nil {
			return nil, nil, wrapErr("due sessions in "+shard, err)
		}
		for _, m := range out.Items {
			v, err := decodeSession(m)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s %s: %v", stringAttr(m, "pk"), stringAttr(m, "sk"), err))
				continue
			}
			if v.State.Live() && !v.DueAt.IsZero() && !v.DueAt.After(t) && !s.expired(v.ExpiresAt) {
				got = append(got, v)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	return got, bad, nil
}

// stringAttr is a string attribute of m, or "?" when it is missing or of
// another type (a damaged record may lack anything).
func stringAttr(m item, name string) string {
	if v, ok := m[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return "?"
}
