package store

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// itemSize estimates an item's size the way DynamoDB counts it (names plus
// values, UTF-8), erring on the large side, so an oversized write is refused
// here with ErrTooLarge instead of failing differently per backend (some
// emulators accept any size).
func itemSize(m item) int {
	n := 0
	for name, v := range m {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)/2 + 2
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemSize(v.Value)
	case *types.AttributeValueMemberL:
		n := 3 + len(v.Value)
		for _, e := range v.Value {
			n += valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		return setSize(v.Value)
	case *types.AttributeValueMemberNS:
		return setSize(v.Value) + 2*len(v.Value)
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

func setSize(vs []string) int {
	n := 0
	for _, s := range vs {
		n += len(s)
	}
	return n
}

func checkSize(op string, m item) error {
	if size := itemSize(m); size > MaxItemSize {
		return session.Errorf(session.ErrTooLarge, "store: %s: record of %d bytes exceeds DynamoDB's %d-byte item limit", op, size, MaxItemSize)
	}
	return nil
}
