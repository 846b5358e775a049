package store

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sessionbox/sessionbox/pkg/awserr"
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
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return &session.Error{Kind: session.ErrConflict, Detail: "store: " + op, Err: err}
	}
	return awserr.Wrap("store: "+op, err, dynamoCodes)
}

func dynamoCodes(e smithy.APIError) error {
	switch code := e.ErrorCode(); {
	case code == "ConditionalCheckFailedException":
		return session.ErrConflict
	case unavailableCodes[code]:
		return session.ErrUnavailable
	case code == "ValidationException" && isSizeMessage(e.ErrorMessage()):
		return session.ErrTooLarge
	}
	return nil
}

func isSizeMessage(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "item size") || strings.Contains(msg, "maximum allowed size")
}
