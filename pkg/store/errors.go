package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// unavailableCodes are DynamoDB error codes that mean "try again later":
// throttling and server-side trouble.
var unavailableCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"InternalFailure":                        true,
	"ServiceUnavailable":                     true,
	"LimitExceededException":                 true,
}

// wrapErr turns an SDK error into a domain error: a failed condition is
// ErrConflict, throttling, 5xx answers and unreachable endpoints are
// ErrUnavailable, an oversized item is ErrTooLarge. op says what was tried.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	detail := "store: " + op
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
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return session.ErrConflict
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		switch {
		case code == "ConditionalCheckFailedException":
			return session.ErrConflict
		case unavailableCodes[code]:
			return session.ErrUnavailable
		case code == "ValidationException" && isSizeMessage(apiErr.ErrorMessage()):
			return session.ErrTooLarge
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

func isSizeMessage(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "item size") || strings.Contains(msg, "maximum allowed size")
}
