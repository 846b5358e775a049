package awserr_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sessionbox/sessionbox/pkg/awserr"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	codes := func(e smithy.APIError) error {
		if e.ErrorCode() == "Mine" {
			return session.ErrConflict
		}
		return nil
	}
	respErr := func(status int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: errors.New("boom")}
	}
	cases := []struct {
		name string
		err  error
		want error // nil: no domain kind
	}{
		{"service code", &smithy.GenericAPIError{Code: "Mine"}, session.ErrConflict},
		{"service code wrapped", fmt.Errorf("op: %w", &smithy.GenericAPIError{Code: "Mine"}), session.ErrConflict},
		{"unknown code", &smithy.GenericAPIError{Code: "Other"}, nil},
		{"5xx answer", respErr(503), session.ErrUnavailable},
		{"4xx answer", respErr(400), nil},
		{"unreachable", &net.OpError{Op: "dial", Err: errors.New("refused")}, session.ErrUnavailable},
		{"retries exhausted", &retry.MaxAttemptsError{Attempt: 3, Err: errors.New("x")}, session.ErrUnavailable},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), session.ErrTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := awserr.Wrap("store: op", c.err, codes)
			if err == nil {
				t.Fatal("nil error")
			}
			var de *session.Error
			isDomain := errors.As(err, &de)
			switch {
			case c.want == nil && isDomain:
				t.Fatalf("got domain kind %v, want none", de.Kind)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %v, want kind %v", err, c.want)
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("%v does not wrap the cause", err)
			}
		})
	}
	if awserr.Wrap("x", nil, codes) != nil {
		t.Fatal("nil error wrapped")
	}
	canceled := awserr.Wrap("x", context.Canceled, codes)
	var de *session.Error
	if errors.As(canceled, &de) || !errors.Is(canceled, context.Canceled) {
		t.Fatalf("cancelled = %v: must stay a plain cancellation", canceled)
	}
}
