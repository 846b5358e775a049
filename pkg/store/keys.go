package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// keysShard is the deadline index partition that lists API keys. It never
// collides with a DUE#n shard, so the reaper does not see keys.
const keysShard = "KEYS"

const keySK = "KEY"

// keyRecord is an API key as stored; dueShard and dueAt (its creation, in
// epoch seconds) put it in the index so keys can be listed with a Query.
type keyRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Hash      string `dynamodbav:"hash"`
	Prefix    string `dynamodbav:"prefix,omitempty"`
	Tenant    string `dynamodbav:"tenant"`
	Principal string `dynamodbav:"principal"`
	CreatedAt string `dynamodbav:"createdAt,omitempty"`
	RevokedAt string `dynamodbav:"revokedAt,omitempty"`
	DueShard  string `dynamodbav:"dueShard"`
	DueAt     int64  `dynamodbav:"dueAt"`
}

func decodeKey(m item) (*session.APIKey, error) {
	var r keyRecord
	if err := unmarshal(m, &r); err != nil {
		return nil, err
	}
	var p timeParser
	k := &session.APIKey{
		Hash: r.Hash, Prefix: r.Prefix, Tenant: r.Tenant, Principal: r.Principal,
		CreatedAt: p.parse("createdAt", r.CreatedAt),
		RevokedAt: p.parse("revokedAt", r.RevokedAt),
	}
	if p.err != nil {
		return nil, fmt.Errorf("api key %s: %w", r.Prefix, p.err)
	}
	return k, nil
}

// validHash accepts what a key record stores: the lower-case hex SHA-256.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PutAPIKey stores a key; ErrConflict when its hash is already stored.
func (s *Store) PutAPIKey(ctx context.Context, k *session.APIKey) error {
	if !validHash(k.Hash) {
		return session.Errorf(session.ErrInvalid, "store: API key hash must be 64 lower-case hex digits")
	}
	if err := validOwner(k.Tenant, k.Principal); err != nil {
		return err
	}
	m, err := marshal(keyRecord{
		PK: keyPK(k.Hash), SK: keySK, Hash: k.Hash, Prefix: k.Prefix,
		Tenant: k.Tenant, Principal: k.Principal,
		CreatedAt: fmtTime(k.CreatedAt), RevokedAt: fmtTime(k.RevokedAt),
		DueShard: keysShard, DueAt: epochSeconds(k.CreatedAt),
	})
	if err != nil {
		return wrapErr("put API key", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     m,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	return wrapErr("put API key", err)
}

// GetAPIKey returns the key with this hash; ErrNotFound for an unknown one.
func (s *Store) GetAPIKey(ctx context.Context, hash string) (*session.APIKey, error) {
	if !validHash(hash) {
		return nil, session.Errorf(session.ErrNotFound, "API key not found")
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(keyPK(hash), keySK),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrapErr("get API key", err)
	}
	if len(out.Item) == 0 {
		return nil, session.Errorf(session.ErrNotFound, "API key not found")
	}
	k, err := decodeKey(out.Item)
	return k, wrapErr("get API key", err)
}

// ListAPIKeys returns every stored key, revoked ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context) ([]*session.APIKey, error) {
	var (
		keys  []*session.APIKey
		start item
	)
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexByDeadline),
			KeyConditionExpression:    aws.String("#shard = :shard"),
			ExpressionAttributeNames:  map[string]string{"#shard": attrDueShard},
			ExpressionAttributeValues: item{":shard": str(keysShard)},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, wrapErr("list API keys", err)
		}
		for _, m := range out.Items {
			k, err := decodeKey(m)
			if err != nil {
				return nil, wrapErr("list API keys", err)
			}
			keys = append(keys, k)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		start = out.LastEvaluatedKey
	}
}

// RevokeAPIKey marks the key revoked at t; ErrNotFound for an unknown hash.
func (s *Store) RevokeAPIKey(ctx context.Context, hash string, t time.Time) error {
	if !validHash(hash) {
		return session.Errorf(session.ErrNotFound, "API key not found")
	}
	if t.IsZero() {
		t = s.now()
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(keyPK(hash), keySK),
		UpdateExpression:          aws.String("SET #rev = :t"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#rev": "revokedAt", "#pk": attrPK},
		ExpressionAttributeValues: item{":t": str(fmtTime(t))},
	})
	err = wrapErr("revoke API key", err)
	if errors.Is(err, session.ErrConflict) {
		return session.Errorf(session.ErrNotFound, "API key not found")
	}
	return err
}
