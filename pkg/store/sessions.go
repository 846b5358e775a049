package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func validKey(k session.Key) error {
	if err := validOwner(k.Tenant, k.Principal); err != nil {
		return err
	}
	if k.SessionID == "" {
		return session.Errorf(session.ErrInvalid, "store: empty session id")
	}
	return nil
}

func validOwner(tenant, principal string) error {
	if tenant == "" || principal == "" {
		return session.Errorf(session.ErrInvalid, "store: tenant and principal are required")
	}
	return nil
}

// GetSession returns the session, or ErrNotFound when there is none or its
// record has expired.
func (s *Store) GetSession(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := validKey(key); err != nil {
		return nil, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(sessionPK(key.Tenant, key.Principal), sessionSK(key.SessionID)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrapErr("get session", err)
	}
	if len(out.Item) == 0 {
		return nil, session.Errorf(session.ErrNotFound, "session %q not found", key.SessionID)
	}
	v, err := decodeSession(out.Item)
	if err != nil {
		return nil, wrapErr("get session", err)
	}
	if s.expired(v.ExpiresAt) {
		return nil, session.Errorf(session.ErrNotFound, "session %q not found", key.SessionID)
	}
	return v, nil
}

// CreateSession writes a new record with Version 1. A record whose expiry
// has passed counts as absent and is replaced.
func (s *Store) CreateSession(ctx context.Context, v *session.Session) error {
	if err := validKey(v.Key); err != nil {
		return err
	}
	m, err := s.encodeSession(v, 1)
	if err != nil {
		return wrapErr("create session", err)
	}
	if err := s.putNew(ctx, "create session", m); err != nil {
		return err
	}
	v.Version = 1
	return nil
}

// UpdateSession replaces the record if its stored version is v.Version.
func (s *Store) UpdateSession(ctx context.Context, v *session.Session) error {
	if err := validKey(v.Key); err != nil {
		return err
	}
	m, err := s.encodeSession(v, v.Version+1)
	if err != nil {
		return wrapErr("update session", err)
	}
	if err := s.putVersioned(ctx, "update session", m, v.Version); err != nil {
		return err
	}
	v.Version++
	return nil
}

// putNew writes m unless a live record holds its key.
func (s *Store) putNew(ctx context.Context, op string, m item) error {
	if err := checkSize(op, m); err != nil {
		return err
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     m,
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR (attribute_exists(#exp) AND #exp < :now)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#exp": attrExpiresAt},
		// Whole seconds, strictly before: a record is only overwritten once
		// its expiry has certainly passed.
		ExpressionAttributeValues: item{":now": num(s.now().Unix())},
	})
	return wrapErr(op, err)
}

// putVersioned replaces the record holding m's key if its version is
// expected.
func (s *Store) putVersioned(ctx context.Context, op string, m item, expected int64) error {
	if err := checkSize(op, m); err != nil {
		return err
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      m,
		ConditionExpression:       aws.String("#v = :expected"),
		ExpressionAttributeNames:  map[string]string{"#v": attrVersion},
		ExpressionAttributeValues: item{":expected": num(expected)},
	})
	return wrapErr(op, err)
}

// ListSessions pages through one principal's sessions in session id order.
// A limit of 0 or less means DefaultPageSize; more than MaxPageSize is cut
// to it. The cursor is opaque to callers and only valid for the same owner.
func (s *Store) ListSessions(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*session.Session, string, error) {
	if err := validOwner(tenant, principal); err != nil {
		return nil, "", err
	}
	pk := sessionPK(tenant, principal)
	start, err := decodeCursor(cursor, pk)
	if err != nil {
		return nil, "", err
	}
	limit = pageLimit(limit)
	// One more than asked tells whether another page exists without
	// handing out a cursor that leads to an empty page.
	got, err := s.querySessions(ctx, pk, start, limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(got) <= limit {
		return got, "", nil
	}
	got = got[:limit]
	last := got[limit-1]
	return got, encodeCursor(pk, sessionSK(last.SessionID)), nil
}

// querySessions reads the partition from start until want unexpired
// sessions are collected or the partition ends.
func (s *Store) querySessions(ctx context.Context, pk string, start item, want int) ([]*session.Session, error) {
	var got []*session.Session
	for len(got) < want {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: item{":pk": str(pk), ":prefix": str("S#")},
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(int32(want - len(got))),
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return nil, wrapErr("list sessions", err)
		}
		for _, m := range out.Items {
			v, err := decodeSession(m)
			if err != nil {
				return nil, wrapErr("list sessions", err)
			}
			if !s.expired(v.ExpiresAt) {
				got = append(got, v)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	return got, nil
}

// Page sizes of ListSessions.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

func pageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultPageSize
	case limit > MaxPageSize:
		return MaxPageSize
	}
	return limit
}
