package blob

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/sessionbox/sessionbox/pkg/awserr"
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
	if _, ok := errors.AsType[*types.NoSuchKey](err); ok {
		return &session.Error{Kind: session.ErrNotFound, Detail: "blob: " + op, Err: err}
	}
	if _, ok := errors.AsType[*types.NotFound](err); ok {
		return &session.Error{Kind: session.ErrNotFound, Detail: "blob: " + op, Err: err}
	}
	return awserr.Wrap("blob: "+op, err, s3Codes)
}

func s3Codes(e smithy.APIError) error {
	switch code := e.ErrorCode(); {
	case code == "NoSuchKey" || code == "NotFound":
		return session.ErrNotFound
	case code == "EntityTooLarge":
		return session.ErrTooLarge
	case unavailableCodes[code]:
		return session.ErrUnavailable
	}
	return nil
}
