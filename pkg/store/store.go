// Package store keeps sessionbox's sessions, runs and API keys in one
// DynamoDB table, implementing session.Store (layout: docs/architecture.md,
// "Storage").
//
//	sessions  pk = T#<tenant>#P#<principal>   sk = S#<sessionId>
//	runs      pk = RUN#<runId>                sk = RUN
//	API keys  pk = KEY#<sha256 hex>           sk = KEY
//
// The sparse global secondary index byDeadline (dueShard, dueAt) holds live
// sessions only, spread over a few shards so no single index partition takes
// every write. API keys are also listed through it, under their own shard
// value (KEYS), because the table has no other way to enumerate them short of
// a Scan. The TTL attribute expiresAt removes old records; deletion is late,
// so every read drops records whose expiry has passed.
//
// Times are stored as RFC 3339 strings (UTC, nanoseconds) so they round-trip
// exactly; dueAt and expiresAt are additionally kept as epoch seconds for the
// index and the TTL.
package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Index and attribute names of the table layout.
const (
	IndexByDeadline = "byDeadline"
	attrPK          = "pk"
	attrSK          = "sk"
	attrDueShard    = "dueShard"
	attrDueAt       = "dueAt"
	attrExpiresAt   = "expiresAt"
	attrVersion     = "version"
)

// DefaultDueShards is how many shards the deadline index is spread over
// unless WithDueShards says otherwise. Every deployment reading one table
// must use the same count: sessions on a shard nobody queries are never due.
const DefaultDueShards = 4

// MaxItemSize is DynamoDB's item size limit, attribute names included.
const MaxItemSize = 400 * 1024

// Store is the DynamoDB implementation of session.Store.
type Store struct {
	db     *dynamodb.Client
	table  string
	shards int
	clock  session.Clock
}

var _ session.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithDueShards sets how many shards the deadline index uses (at least 1).
func WithDueShards(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.shards = n
		}
	}
}

// WithClock sets the clock that decides which records have expired.
func WithClock(c session.Clock) Option {
	return func(s *Store) {
		if c != nil {
			s.clock = c
		}
	}
}

// New returns a Store on table, which must have the layout CreateTable makes.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	s := &Store{db: client, table: table, shards: DefaultDueShards, clock: session.SystemClock{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) now() time.Time { return s.clock.Now() }

// expired reports whether a record with this expiry is gone as far as
// readers are concerned (TTL deletion may not have happened yet).
func (s *Store) expired(expiresAt time.Time) bool {
	// Whole seconds, exactly as the conditional writes compare the epoch
	// attribute (expiresAt < :now): a record that reads as gone can always
	// be replaced, and one that can be replaced always reads as gone.
	return !expiresAt.IsZero() && expiresAt.Unix() < s.now().Unix()
}

// keyEscaper keeps '#' out of the parts joined into a partition key, so
// tenant "a#P#b" with principal "c" cannot share a partition with tenant
// "a" and principal "b#P#c". Ordinary ids pass unchanged.
var keyEscaper = strings.NewReplacer("%", "%25", "#", "%23")

func sessionPK(tenant, principal string) string {
	return "T#" + keyEscaper.Replace(tenant) + "#P#" + keyEscaper.Replace(principal)
}

func sessionSK(id string) string { return "S#" + id }

func runPK(id string) string { return "RUN#" + id }

func keyPK(hash string) string { return "KEY#" + hash }

// checkContext fails fast on a cancelled context so a call that cannot
// succeed does not reach the network.
func checkContext(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}
