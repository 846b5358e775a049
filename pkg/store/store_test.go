package store_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/sessionbox/sessionbox/internal/faultproxy"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
	"github.com/sessionbox/sessionbox/pkg/store/storetest"
)

// fastRetries keeps the SDK's retry behaviour (so fault tests see what
// production sees after retries) without its production back-off delays.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 2
		so.RateLimiter = ratelimit.None
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

// client builds the real SDK client for a local endpoint.
func client(endpoint string) *dynamodb.Client {
	return localaws.DynamoDBClient(endpoint, fastRetries)
}

var tableSeq atomic.Int64

// newTable creates a fresh table with the store's layout.
func newTable(t testing.TB, db *dynamodb.Client) string {
	t.Helper()
	name := fmt.Sprintf("sessionbox-test-%d", tableSeq.Add(1))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := store.CreateTable(ctx, db, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return name
}

// minidynServer runs minidyn's HTTP API in process.
func minidynServer(t testing.TB) (*server.Server, string) {
	t.Helper()
	md := server.NewServer()
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	return md, srv.URL
}

func TestContractMinidyn(t *testing.T) {
	t.Parallel()
	md, url := minidynServer(t)
	db := client(url)
	storetest.Run(t, func(t *testing.T, clock session.Clock) storetest.Env {
		table := newTable(t, db)
		return storetest.Env{
			Store: store.New(db, table, store.WithClock(clock)),
			Fail: func(on bool) {
				cond := server.FailureConditionNone
				if on {
					cond = server.FailureConditionInternalServerError
				}
				md.EmulateFailureForTable(table, cond)
			},
		}
	})
}

func TestContractDynalite(t *testing.T) {
	t.Parallel()
	db := client(startDynalite(t))
	storetest.Run(t, func(t *testing.T, clock session.Clock) storetest.Env {
		// Faults come from a proxy in front of dynalite, which has no
		// failure injection of its own.
		proxy := faultproxy.New(t, aws.ToString(db.Options().BaseEndpoint))
		pdb := client(proxy.URL)
		table := newTable(t, pdb)
		fail := proxy.Failing(faultproxy.DynamoDBError(http.StatusInternalServerError, "InternalServerError"))
		return storetest.Env{Store: store.New(pdb, table, store.WithClock(clock)), Fail: fail}
	})
}

func TestRateLimiterMinidyn(t *testing.T) {
	t.Parallel()
	_, url := minidynServer(t)
	db := client(url)
	storetest.RunRateLimiter(t, func(t *testing.T, rate session.RequestRate) session.RateLimiter {
		return store.New(db, newTable(t, db)).NewRateLimiter(rate)
	})
}

func TestRateLimiterDynalite(t *testing.T) {
	t.Parallel()
	db := client(startDynalite(t))
	storetest.RunRateLimiter(t, func(t *testing.T, rate session.RequestRate) session.RateLimiter {
		return store.New(db, newTable(t, db)).NewRateLimiter(rate)
	})
}

// TestRateLimiterOneWritePerRequest measures the limiter's cost: each
// request, admitted or refused, is one UpdateItem and nothing else.
func TestRateLimiterOneWritePerRequest(t *testing.T) {
	t.Parallel()
	md := server.NewServer()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.Header.Get("X-Amz-Target")]++
		mu.Unlock()
		md.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	db := client(srv.URL)
	l := store.New(db, newTable(t, db)).NewRateLimiter(session.RequestRate{PerSecond: 2, Burst: 4})
	mu.Lock()
	clear(calls)
	mu.Unlock()
	now := time.Unix(1_800_000_000, 0)
	admitted := 0
	for range 10 {
		ok, _, err := l.Take(t.Context(), "acme/alice", now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if admitted != 4 || len(calls) != 1 || calls["DynamoDB_20120810.UpdateItem"] != 10 {
		t.Fatalf("admitted %d of 10 with calls %v, want 4 with 10 UpdateItem and nothing else", admitted, calls)
	}
}
