package lambdaenv

import (
	"context"
	"errors"
	"io"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
)

// MetricsNamespace is the CloudWatch namespace of sessionbox's metrics.
const MetricsNamespace = "sessionbox"

// The authorizer's metrics, one of them 1 per invocation. A refusal is a
// function error to Lambda (API Gateway turns exactly "Unauthorized" into
// a 401), so the function's Errors metric counts every wrong key: the
// stack alarms on AuthFailures instead.
const (
	MetricAuthAllowed  = "AuthAllowed"
	MetricAuthRefusals = "AuthRefusals"
	MetricAuthFailures = "AuthFailures"
)

// AuthorizerHandler is the authorizer function's handler: the Authorizer's
// answer, counted as an embedded metric.
type AuthorizerHandler struct {
	base    *Base
	a       *authorizer.Authorizer
	metrics io.Writer
}

// AuthorizerHandler wraps a, writing its metric lines to metrics (stdout in
// Lambda, where CloudWatch Logs extracts them).
func (b *Base) AuthorizerHandler(a *authorizer.Authorizer, metrics io.Writer) *AuthorizerHandler {
	return &AuthorizerHandler{base: b, a: a, metrics: metrics}
}

// Handle answers one authorization request and counts it as allowed,
// refused (a missing, unknown or revoked credential: the Authorizer logs
// why) or failed (the store or the identity provider unreachable, a
// panic), which is what pages.
func (h *AuthorizerHandler) Handle(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (res events.APIGatewayCustomAuthorizerResponse, err error) {
	metric := MetricAuthFailures
	defer func() {
		if v := recover(); v != nil {
			h.count(ctx, MetricAuthFailures)
			panic(v)
		}
		h.count(ctx, metric)
	}()
	res, err = h.a.Handle(ctx, ev)
	switch {
	case err == nil:
		metric = MetricAuthAllowed
	case errors.Is(err, authorizer.ErrUnauthorized):
		metric = MetricAuthRefusals
	default:
		h.base.Log.ErrorContext(ctx, "authorizer failed", "error", err)
	}
	return res, err
}

func (h *AuthorizerHandler) count(ctx context.Context, name string) {
	var ms []Metric
	for _, n := range []string{MetricAuthAllowed, MetricAuthRefusals, MetricAuthFailures} {
		v := 0.0
		if n == name {
			v = 1
		}
		ms = append(ms, Metric{Name: n, Value: v, Unit: "Count"})
	}
	if err := WriteEMF(h.metrics, h.base.Now(), MetricsNamespace, map[string]string{"tenant": h.base.Config.Tenant}, ms); err != nil {
		h.base.Log.ErrorContext(ctx, "authorizer metrics", "error", err)
	}
}
