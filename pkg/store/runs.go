package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// runRecord is a run as stored. The result is a JSON string: it is read and
// written whole, and JSON keeps its shape independent of DynamoDB's types.
type runRecord struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	ID             string `dynamodbav:"runId"`
	Tenant         string `dynamodbav:"tenant"`
	Principal      string `dynamodbav:"principal"`
	SessionID      string `dynamodbav:"sessionId"`
	Status         string `dynamodbav:"status"`
	Code           string `dynamodbav:"code,omitempty"`
	TimeoutSecs    int    `dynamodbav:"timeoutSecs,omitempty"`
	IdempotencyKey string `dynamodbav:"idempotencyKey,omitempty"`
	Result         string `dynamodbav:"result,omitempty"`
	ResultKey      string `dynamodbav:"resultKey,omitempty"`
	Error          string `dynamodbav:"error,omitempty"`
	CreatedAt      string `dynamodbav:"createdAt,omitempty"`
	StartedAt      string `dynamodbav:"startedAt,omitempty"`
	FinishedAt     string `dynamodbav:"finishedAt,omitempty"`
	ExpiresTime    string `dynamodbav:"expiresTime,omitempty"`
	ExpiresAt      int64  `dynamodbav:"expiresAt,omitempty"`
	Version        int64  `dynamodbav:"version"`
}

const runSK = "RUN"

func encodeRun(r *session.Run, version int64) (item, error) {
	rec := runRecord{
		PK: runPK(r.ID), SK: runSK, ID: r.ID,
		Tenant: r.Tenant, Principal: r.Principal, SessionID: r.SessionID,
		Status: string(r.Status), Code: r.Code, TimeoutSecs: r.TimeoutSecs,
		IdempotencyKey: r.IdempotencyKey, ResultKey: r.ResultKey, Error: r.Error,
		CreatedAt: fmtTime(r.CreatedAt), StartedAt: fmtTime(r.StartedAt), FinishedAt: fmtTime(r.FinishedAt),
		ExpiresTime: fmtTime(r.ExpiresAt), ExpiresAt: epochSeconds(r.ExpiresAt),
		Version: version,
	}
	if r.Result != nil {
		b, err := json.Marshal(r.Result)
		if err != nil {
			return nil, fmt.Errorf("encode run result: %w", err)
		}
		rec.Result = string(b)
	}
	return marshal(rec)
}

func decodeRun(m item) (*session.Run, error) {
	var rec runRecord
	if err := unmarshal(m, &rec); err != nil {
		return nil, err
	}
	var p timeParser
	r := &session.Run{
		ID:     rec.ID,
		Key:    session.Key{Tenant: rec.Tenant, Principal: rec.Principal, SessionID: rec.SessionID},
		Status: session.RunStatus(rec.Status), Code: rec.Code, TimeoutSecs: rec.TimeoutSecs,
		IdempotencyKey: rec.IdempotencyKey, ResultKey: rec.ResultKey, Error: rec.Error,
		CreatedAt:  p.parse("createdAt", rec.CreatedAt),
		StartedAt:  p.parse("startedAt", rec.StartedAt),
		FinishedAt: p.parse("finishedAt", rec.FinishedAt),
		ExpiresAt:  p.parse("expiresTime", rec.ExpiresTime),
		Version:    rec.Version,
	}
	if p.err != nil {
		return nil, fmt.Errorf("run %s: %w", rec.ID, p.err)
	}
	if rec.Result != "" {
		r.Result = new(session.ExecResult)
		if err := json.Unmarshal([]byte(rec.Result), r.Result); err != nil {
			return nil, fmt.Errorf("run %s: stored result: %w", rec.ID, err)
		}
	}
	return r, nil
}

func validRunID(id string) error {
	if id == "" {
		return session.Errorf(session.ErrInvalid, "store: empty run id")
	}
	return nil
}

// CreateRun writes a new run with Version 1; ErrConflict when the id is
// taken by a run that has not expired. A result too large for one item is
// ErrTooLarge: the caller keeps it as a blob and sets ResultKey instead.
func (s *Store) CreateRun(ctx context.Context, r *session.Run) error {
	if err := validRunID(r.ID); err != nil {
		return err
	}
	m, err := encodeRun(r, 1)
	if err != nil {
		return wrapErr("create run", err)
	}
	if err := s.putNew(ctx, "create run", m); err != nil {
		return err
	}
	r.Version = 1
	return nil
}

// GetRun returns the run, or ErrNotFound when there is none or it expired.
func (s *Store) GetRun(ctx context.Context, id string) (*session.Run, error) {
	if err := validRunID(id); err != nil {
		return nil, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(runPK(id), runSK),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, wrapErr("get run", err)
	}
	if len(out.Item) == 0 {
		return nil, session.Errorf(session.ErrNotFound, "run %q not found", id)
	}
	r, err := decodeRun(out.Item)
	if err != nil {
		return nil, wrapErr("get run", err)
	}
	if s.expired(r.ExpiresAt) {
		return nil, session.Errorf(session.ErrNotFound, "run %q not found", id)
	}
	return r, nil
}

// UpdateRun replaces the run if its stored version is r.Version.
func (s *Store) UpdateRun(ctx context.Context, r *session.Run) error {
	if err := validRunID(r.ID); err != nil {
		return err
	}
	m, err := encodeRun(r, r.Version+1)
	if err != nil {
		return wrapErr("update run", err)
	}
	if err := s.putVersioned(ctx, "update run", m, r.Version); err != nil {
		return err
	}
	r.Version++
	return nil
}
