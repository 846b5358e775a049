// Package awserr turns AWS SDK errors into the domain's error kinds, for the
// adapters over AWS services (pkg/store, pkg/blob): the ones every service
// shares (deadlines, throttling, 5xx answers, unreachable endpoints, retries
// exhausted) here, each service's own codes in its adapter.
package awserr

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Codes maps a service's own API error to a domain kind, or nil when it has
// no opinion.
type Codes func(smithy.APIError) error

// Wrap turns err into a domain error whose detail is detail: the kind the
// service's codes give, else the kind every AWS service shares, else err
// wrapped as it is. A cancelled context stays a plain error.
func Wrap(detail string, err error, codes Codes) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &session.Error{Kind: session.ErrTimeout, Detail: detail, Err: err}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", detail, err)
	}
	if kind := Kind(err, codes); kind != nil {
		return &session.Error{Kind: kind, Detail: detail, Err: err}
	}
	return fmt.Errorf("%s: %w", detail, err)
}

// Kind is the domain kind of err, or nil when none fits.
func Kind(err error, codes Codes) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && codes != nil {
		if kind := codes(apiErr); kind != nil {
			return kind
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
