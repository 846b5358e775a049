// Package apigw serves net/http handlers from API Gateway REST API Lambda
// proxy events, buffered or with response streaming, so the Lambda functions
// run exactly the handlers that local mode serves.
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

type authorizerKey struct{}

type clientPathKey struct{}

// ClientPath returns the path as the client asked for it, with the stage
// (or a custom domain's base path) that the event's path leaves out, e.g.
// "/prod/v1/sessions" for "/v1/sessions"; "" when the event did not say.
func ClientPath(ctx context.Context) string {
	p, _ := ctx.Value(clientPathKey{}).(string)
	return p
}

// Authorizer returns the authorizer context API Gateway attached to the
// request (for a Lambda authorizer, the context map it returned), or nil.
func Authorizer(ctx context.Context) map[string]any {
	m, _ := ctx.Value(authorizerKey{}).(map[string]any)
	return m
}

// NewRequest builds the http.Request an API Gateway proxy event describes.
func NewRequest(ctx context.Context, ev events.APIGatewayProxyRequest) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("decode base64 body: %w", err)
		}
		body = decoded
	}
	u := url.URL{Path: ev.Path, RawQuery: query(ev).Encode()}
	if ev.Path == "" {
		u.Path = "/"
	}
	if ctxAuth := ev.RequestContext.Authorizer; ctxAuth != nil {
		ctx = context.WithValue(ctx, authorizerKey{}, ctxAuth)
	}
	if p := ev.RequestContext.Path; p != "" {
		ctx = context.WithValue(ctx, clientPathKey{}, p)
	}
	req, err := http.NewRequestWithContext(ctx, ev.HTTPMethod, u.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range headers(ev) {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.ContentLength = int64(len(body))
	req.Host = req.Header.Get("Host")
	if req.Host == "" {
		req.Host = ev.RequestContext.DomainName
	}
	req.RemoteAddr = ev.RequestContext.Identity.SourceIP
	req.RequestURI = u.RequestURI()
	if req.Header.Get("X-Request-Id") == "" && ev.RequestContext.RequestID != "" {
		req.Header.Set("X-Request-Id", ev.RequestContext.RequestID)
	}
	return req, nil
}

// query merges the single- and multi-value query maps; API Gateway fills
// both, and the multi-value one is complete when present.
func query(ev events.APIGatewayProxyRequest) url.Values {
	q := url.Values{}
	for k, vs := range ev.MultiValueQueryStringParameters {
		q[k] = append([]string(nil), vs...)
	}
	for k, v := range ev.QueryStringParameters {
		if _, ok := q[k]; !ok {
			q.Set(k, v)
		}
	}
	return q
}

func headers(ev events.APIGatewayProxyRequest) http.Header {
	h := http.Header{}
	for k, vs := range ev.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range ev.Headers {
		if _, ok := h[http.CanonicalHeaderKey(k)]; !ok {
			h.Set(k, v)
		}
	}
	return h
}

// isText reports whether a response with this content type can travel as a
// plain string; anything else is base64-encoded for API Gateway.
func isText(contentType string) bool {
	ct := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	switch {
	case ct == "":
		return true
	case strings.HasPrefix(ct, "text/"):
		return true
	case strings.HasSuffix(ct, "json"), strings.HasSuffix(ct, "+xml"), ct == "application/xml",
		ct == "application/x-ndjson", ct == "application/javascript":
		return true
	}
	return false
}
