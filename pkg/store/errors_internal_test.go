package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestWrapErr(t *testing.T) {
	t.Parallel()
	sentinels := []error{session.ErrConflict, session.ErrUnavailable, session.ErrTooLarge, session.ErrTimeout, session.ErrNotFound}
	tests := []struct {
		name string
		err  error
		want error // nil: none of the sentinels
	}{
		{"condition failed", &types.ConditionalCheckFailedException{}, session.ErrConflict},
		{"condition failed, generic", &smithy.GenericAPIError{Code: "ConditionalCheckFailedException"}, session.ErrConflict},
		{"throttled", &smithy.GenericAPIError{Code: "ThrottlingException"}, session.ErrUnavailable},
		{"over capacity", &types.ProvisionedThroughputExceededException{}, session.ErrUnavailable},
		{"internal error", &types.InternalServerError{}, session.ErrUnavailable},
		{"network", &net.OpError{Op: "dial", Err: errors.New("refused")}, session.ErrUnavailable},
		{"item too big", &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}, session.ErrTooLarge},
		{"other validation", &smithy.GenericAPIError{Code: "ValidationException", Message: "bad expression"}, nil},
		{"deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), session.ErrTimeout},
		{"cancelled", context.Canceled, nil},
		{"unknown table", &types.ResourceNotFoundException{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := wrapErr("op", tc.err)
			if !errors.Is(got, tc.err) {
				t.Errorf("cause lost: %v", got)
			}
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v", got, s, errors.Is(got, s))
				}
			}
		})
	}
	if wrapErr("op", nil) != nil {
		t.Error("nil error wrapped")
	}
}

func TestItemSizeCountsNamesAndValues(t *testing.T) {
	t.Parallel()
	m := item{
		"pk":   str("abc"),                                                             // 2 + 3
		"n":    num(12345),                                                             // 1 + 5/2+2
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("xy")}}, // 4 + 3+1+2
	}
	if got, want := itemSize(m), 5+5+10; got != want {
		t.Fatalf("itemSize = %d, want %d", got, want)
	}
}
