package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/jsii-runtime-go"
)

// problemBase matches pkg/api: clients switch on the same type URIs whether
// the gateway or the function rejected the call.
const problemBase = "https://sessionbox.dev/problems/"

// gatewayProblem is an answer API Gateway gives on its own, as
// application/problem+json like the API's.
type gatewayProblem struct {
	id     string
	kind   awsapigateway.ResponseType
	status string // "" keeps the status API Gateway chose
	slug   string // "" is about:blank, RFC 9457's "nothing more than the status"
	title  string
	hint   string // an extension member saying what to do, "" for none
}

func gatewayProblems() []gatewayProblem {
	return []gatewayProblem{
		{"Unauthorized", awsapigateway.ResponseType_UNAUTHORIZED(), "401", "unauthorized", "Unauthorized", ""},
		{"AccessDenied", awsapigateway.ResponseType_ACCESS_DENIED(), "403", "forbidden", "Forbidden", ""},
		// A REST API answers an unknown route with 403 "Missing
		// Authentication Token"; it is a 404.
		{"UnknownRoute", awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN(), "404", "not-found", "Not found", ""},
		{"Throttled", awsapigateway.ResponseType_THROTTLED(), "429", "limit-reached", "Limit reached", ""},
		{"QuotaExceeded", awsapigateway.ResponseType_QUOTA_EXCEEDED(), "429", "limit-reached", "Limit reached", ""},
		{"IntegrationTimeout", awsapigateway.ResponseType_INTEGRATION_TIMEOUT(), "504", "timeout", "Timed out", ""},
		{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX(), "", "", "Request rejected", ""},
		{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX(), "", "internal", "Internal error", ""},
	}
}

// addProblemResponses replaces API Gateway's own error bodies. With exactly
// one allowed origin the errors carry it, so a browser can read why it was
// refused; with several, a static header cannot name the caller's.
func addProblemResponses(api awsapigateway.RestApi, cfg Config) {
	origins := cfg.AllowedOrigins
	for _, p := range gatewayProblems() {
		if p.status == "401" && !cfg.AcceptXAPIKey {
			// The gateway refuses X-API-Key alone before the authorizer
			// sees it: say which header this deployment reads.
			p.hint = "send the API key as Authorization: Bearer <key>; this deployment does not read X-API-Key"
		}
		headers := map[string]*string{"Content-Type": jsii.String("'application/problem+json'")}
		if len(origins) == 1 {
			headers["Access-Control-Allow-Origin"] = jsii.String("'" + origins[0] + "'")
			headers["Vary"] = jsii.String("'Origin'")
		}
		if p.status == "401" {
			headers["WWW-Authenticate"] = jsii.String(`'Bearer realm="sessionbox"'`)
		}
		opts := &awsapigateway.GatewayResponseOptions{
			Type:            p.kind,
			ResponseHeaders: &headers,
			Templates:       &map[string]*string{"application/json": jsii.String(p.body())},
		}
		if p.status != "" {
			opts.StatusCode = jsii.String(p.status)
		}
		api.AddGatewayResponse(jsii.String("Problem"+p.id), opts)
	}
}

// body renders the problem; $context.error.messageString is already a
// quoted JSON string.
func (p gatewayProblem) body() string {
	typ := "about:blank"
	if p.slug != "" {
		typ = problemBase + p.slug
	}
	status := ""
	if p.status != "" {
		status = fmt.Sprintf(`"status":%s,`, p.status)
	}
	hint := ""
	if p.hint != "" {
		hint = fmt.Sprintf(`,"hint":%q`, p.hint)
	}
	return fmt.Sprintf(`{"type":%q,"title":%q,%s"detail":$context.error.messageString,"requestId":"$context.requestId"%s}`,
		typ, p.title, status, hint)
}
