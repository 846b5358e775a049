package store_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/internal/faultproxy"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// shardCounts reads the deadline index directly and counts items per shard.
func shardCounts(t *testing.T, db *dynamodb.Client, table string, shards int) []int {
	t.Helper()
	counts := make([]int, shards)
	for i := range shards {
		out, err := db.Query(t.Context(), &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			IndexName:                 aws.String(store.IndexByDeadline),
			KeyConditionExpression:    aws.String("dueShard = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: fmt.Sprintf("DUE#%d", i)}},
		})
		if err != nil {
			t.Fatalf("query shard %d: %v", i, err)
		}
		counts[i] = len(out.Items)
	}
	return counts
}

// TestDueSharding checks that live sessions spread over every shard, that
// only live ones are indexed, and that each store finds all of them
// whatever the shard count, as long as writers and readers agree on it.
func TestDueSharding(t *testing.T) {
	t.Parallel()
	_, url := minidynServer(t)
	db := client(url)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, shards := range []int{1, 4, 7} {
		t.Run(fmt.Sprint(shards, "shards"), func(t *testing.T) {
			table := newTable(t, db)
			st := store.New(db, table, store.WithDueShards(shards))
			const live = 40
			for i := range live + 5 {
				state := session.StateRunning
				if i >= live {
					state = session.StateStopped
				}
				s := &session.Session{
					Key:   session.Key{Tenant: "acme", Principal: fmt.Sprint("p", i%3), SessionID: fmt.Sprint("s", i)},
					State: state, DueAt: now.Add(-time.Duration(i) * time.Second),
				}
				if err := st.CreateSession(t.Context(), s); err != nil {
					t.Fatal(err)
				}
			}
			counts, total := shardCounts(t, db, table, shards), 0
			for i, c := range counts {
				if c == 0 {
					t.Errorf("shard %d holds no session: %v", i, counts)
				}
				total += c
			}
			if total != live {
				t.Fatalf("index holds %d sessions, want the %d live ones", total, live)
			}
			got, err := st.DueSessions(t.Context(), now, 1000)
			if err != nil || len(got) != live {
				t.Fatalf("DueSessions: %d sessions, %v", len(got), err)
			}
		})
	}
}

// TestThrottlingIsUnavailable checks that DynamoDB's throttling answers,
// which the SDK retries before giving up, reach callers as ErrUnavailable.
func TestThrottlingIsUnavailable(t *testing.T) {
	t.Parallel()
	_, url := minidynServer(t)
	proxy := faultproxy.New(t, url)
	db := client(proxy.URL)
	st := store.New(db, newTable(t, db))
	key := session.Key{Tenant: "acme", Principal: "alice", SessionID: "s1"}
	for _, code := range []string{"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"} {
		proxy.Set(faultproxy.DynamoDBError(http.StatusBadRequest, code))
		if _, err := st.GetSession(t.Context(), key); !errors.Is(err, session.ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", code, err)
		}
	}
	proxy.Set(faultproxy.DynamoDBError(http.StatusServiceUnavailable, "ServiceUnavailable"))
	if err := st.CreateSession(t.Context(), &session.Session{Key: key, State: session.StateStarting}); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("503: %v, want ErrUnavailable", err)
	}
	proxy.Heal()
	if _, err := st.GetSession(t.Context(), key); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("after the faults: %v, want ErrNotFound (nothing was written)", err)
	}
}

// TestUnreachableIsUnavailable checks a DynamoDB endpoint nobody listens on.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	_, url := minidynServer(t)
	db := client(url)
	table := newTable(t, db)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(client(fmt.Sprintf("http://127.0.0.1:%d", port)), table)
	_, err = st.GetRun(t.Context(), "r1")
	if !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("GetRun: %v, want ErrUnavailable", err)
	}
}
