package blob

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// unavailableCodes are S3 error codes that mean "try again later".
var unavailableCodes = map[string]bool{
	"SlowDown": true, "InternalError": true, "ServiceUnavailable": true,
	"RequestTimeout": true, "Throttling": true, "ThrottlingException": true,
}

// wrapErr turns an SDK error into a domain error: missing objects are
// ErrNotFound, throttling, 5xx and unreachable endpoints ErrUnavailable.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	detail := "blob: " + op
	if errors.Is(err, context.DeadlineExceeded) {
		return &session.Error{Kind: session.ErrTimeout, Detail: detail, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", detail, err)
	}
	if kind := classify(err); kind != nil {
		return &session.Error{Kind: kind, Detail: detail, Err: err}
	}
	return fmt.Errorf("%s: %w", detail, err)
}

func classify(err error) error {
	if _, ok := errors.AsType[*types.NoSuchKey](err); ok {
		return session.ErrNotFound
	}
	if _, ok := errors.AsType[*types.NotFound](err); ok {
		return session.ErrNotFound
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch code := apiErr.ErrorCode(); {
		case code == "NoSuchKey" || code == "NotFound":
			return session.ErrNotFound
		case code == "EntityTooLarge":
			return session.ErrTooLarge
		case unavailableCodes[code]:
			return session.ErrUnavailable
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500 {
		return session.ErrUnavailable
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return session.ErrUnavailable
	}
	var maxAttempts *retry.MaxAttemptsError
	if errors.As(err, &maxAttempts) {
		return session.ErrUnavailable
	}
	return nil
}
