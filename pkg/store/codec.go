package store

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type item = map[string]types.AttributeValue

// fmtTime renders t for storage; the zero time is stored as nothing.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored %s %q: %w", field, s, err)
	}
	return t, nil
}

// epochSeconds is t as the index and the TTL want it; 0 for the zero time.
func epochSeconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// timeParser collects the first parse error so decoders can read a record's
// times in a row and check once.
type timeParser struct{ err error }

func (p *timeParser) parse(field, s string) time.Time {
	t, err := parseTime(field, s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return t
}

func marshal(v any) (item, error) {
	m, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return m, nil
}

func unmarshal(m item, v any) error {
	if err := attributevalue.UnmarshalMap(m, v); err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	return nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
}

func keyOf(pk, sk string) item { return item{attrPK: str(pk), attrSK: str(sk)} }
