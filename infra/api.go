package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// route is one method of the REST API (pkg/api/openapi.json).
type route struct {
	fn     string
	method string
	path   string
	public bool // no authorizer: liveness, the OpenAPI document, the playground page
}

func routes() []route {
	const s = "/v1/sessions/{id}"
	return []route{
		{fn: "start", method: "POST", path: s + "/sandbox/start"},
		{fn: "stop", method: "POST", path: s + "/sandbox/stop"},
		{fn: "stop", method: "POST", path: s + "/checkpoint"},
		{fn: "stop", method: "DELETE", path: s},
		{fn: "status", method: "GET", path: s + "/sandbox"},
		{fn: "status", method: "GET", path: s + "/sandbox/metrics"},
		{fn: "status", method: "GET", path: "/v1/sessions"},
		{fn: "status", method: "GET", path: "/v1/runs/{runId}"},
		{fn: "status", method: "GET", path: "/healthz", public: true},
		{fn: "status", method: "GET", path: "/v1/openapi.json", public: true},
		{fn: "execute", method: "POST", path: s + "/execute"},
		{fn: "execute", method: "POST", path: s + "/execute/stream"},
		{fn: "execute", method: "POST", path: s + "/reset"},
		{fn: "execute", method: "POST", path: s + "/runs"},
		{fn: "execute", method: "POST", path: "/v1/execute"},
		{fn: "execute", method: "POST", path: s + "/contexts"},
		{fn: "execute", method: "GET", path: s + "/contexts"},
		{fn: "execute", method: "DELETE", path: s + "/contexts/{contextId}"},
		{fn: "execute", method: "POST", path: s + "/contexts/{contextId}/reset"},
		{fn: "execute", method: "POST", path: s + "/commands"},
		{fn: "execute", method: "GET", path: s + "/commands"},
		{fn: "execute", method: "GET", path: s + "/commands/{commandId}"},
		{fn: "execute", method: "GET", path: s + "/commands/{commandId}/output"},
		{fn: "execute", method: "POST", path: s + "/commands/{commandId}/kill"},
		{fn: "execute", method: "POST", path: "/v1/execute/stream"},
		{fn: "install", method: "POST", path: s + "/install"},
		{fn: "install", method: "POST", path: s + "/install/stream"},
		{fn: "files", method: "GET", path: s + "/files"},
		{fn: "files", method: "DELETE", path: s + "/files"},
		{fn: "files", method: "GET", path: s + "/files/content"},
		{fn: "files", method: "PUT", path: s + "/files/content"},
		{fn: "files", method: "POST", path: s + "/files/upload-url"},
		{fn: "files", method: "POST", path: s + "/files/import"},
		{fn: "files", method: "POST", path: s + "/files/download-url"},
		{fn: "fetch", method: "POST", path: s + "/files/upload-urls"},
		{fn: "mcp", method: "POST", path: "/v1/mcp"},
	}
}

// playgroundRoutes serve the playground page (pkg/playground) and its files
// from the status function. They are public, as a browser loads a page
// before it has anything to authenticate with; the page holds no data and
// calls the API with the key the user pastes.
func playgroundRoutes() []route {
	return []route{
		{fn: "status", method: "GET", path: "/", public: true},
		{fn: "status", method: "GET", path: "/playground/{file}", public: true},
	}
}

// stackRoutes are the routes this stack's configuration serves.
func stackRoutes(cfg Config) []route {
	if cfg.Playground {
		return append(routes(), playgroundRoutes()...)
	}
	return routes()
}

// authCacheTTL is how long API Gateway reuses an authorizer decision; a
// revoked key keeps working this long (README).
const authCacheMinutes = 5

// streamTimeoutMinutes is the most API Gateway allows a streamed response.
const streamTimeoutMinutes = 15

type restAPI struct {
	api       awsapigateway.RestApi
	accessLog awslogs.LogGroup
}

func newRestAPI(stack awscdk.Stack, cfg Config, fns map[string]function) restAPI {
	accessLog := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     retentionDays[cfg.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	api := awsapigateway.NewRestApi(stack, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName:    jsii.String("sessionbox-" + cfg.Tenant),
		Description:    jsii.String("sessionbox API for tenant " + cfg.Tenant),
		EndpointTypes:  &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		CloudWatchRole: jsii.Bool(cfg.APIGatewayCloudWatchRole),
		// API Gateway returns a buffered isBase64Encoded body as bytes only
		// when the request's first Accept matches binaryMediaTypes; with
		// "*/*" every Accept does (fetch's and curl's */*, none, a
		// browser's list), and every request body reaches the function
		// base64-encoded, which pkg/apigw decodes. pkg/lambdaemu's gateway
		// applies the same rules with this value (TestStackMatchesInfra).
		BinaryMediaTypes:            jsii.Strings("*/*"),
		DefaultCorsPreflightOptions: corsOptions(cfg.AllowedOrigins),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(cfg.StageName),
			ThrottlingRateLimit:  jsii.Number(cfg.ThrottleRate),
			ThrottlingBurstLimit: jsii.Number(cfg.ThrottleBurst),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(accessLog),
			AccessLogFormat:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
			TracingEnabled:       jsii.Bool(cfg.Tracing),
			// Execution logs for failed requests only (authorizer and
			// integration errors); INFO would log every request twice.
			LoggingLevel:     awsapigateway.MethodLoggingLevel_ERROR,
			DataTraceEnabled: jsii.Bool(false),
		},
	})
	auth := newAuthorizer(stack, cfg, fns["authorizer"])
	integrations := map[string]awsapigateway.LambdaIntegration{}
	for _, r := range stackRoutes(cfg) {
		in, ok := integrations[r.fn]
		if !ok {
			in = integrationFor(fns[r.fn])
			integrations[r.fn] = in
		}
		opts := &awsapigateway.MethodOptions{
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
			Authorizer:        auth,
		}
		if r.public {
			opts = &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE}
		}
		m := api.Root().ResourceForPath(jsii.String(r.path)).AddMethod(jsii.String(r.method), in, opts)
		if r.public {
			suppress(m, nagReason{"AwsSolutions-APIG4", "public by design: liveness, the OpenAPI document and the playground page hold no data", nil})
		}
	}
	suppressAPIFindings(stack, cfg, api)
	addProblemResponses(api, cfg)
	if cfg.WAF {
		addWebACL(stack, cfg, api)
	}
	preflightAsText(api)
	return restAPI{api: api, accessLog: accessLog}
}

// preflightAsText sets the CORS preflight's MOCK integrations to
// CONVERT_TO_TEXT: with binaryMediaTypes "*/*" API Gateway would otherwise
// treat their empty body as binary and answer every preflight 500.
func preflightAsText(api awsapigateway.RestApi) {
	for _, m := range *api.Methods() {
		if *m.HttpMethod() == "OPTIONS" {
			m.Node().DefaultChild().(awscdk.CfnResource).AddPropertyOverride(
				jsii.String("Integration.ContentHandling"), jsii.String("CONVERT_TO_TEXT"))
		}
	}
}

// suppressAPIFindings excuses what cdk-nag reports on the API as a whole.
func suppressAPIFindings(stack awscdk.Stack, cfg Config, api awsapigateway.RestApi) {
	suppress(api,
		nagReason{"AwsSolutions-COG4", "callers authenticate with sessionbox API keys (hashed in the tenant's table) or an optional JWT, checked by the Lambda REQUEST authorizer; there is no Cognito user pool", nil},
		nagReason{"AwsSolutions-APIG2", "the functions validate every body and parameter and answer a problem+json 400 naming the field (pkg/api); a gateway validator would duplicate the OpenAPI schema and answer less precisely", nil})
	for _, m := range *api.Methods() {
		if *m.HttpMethod() == "OPTIONS" {
			suppress(m, nagReason{"AwsSolutions-APIG4", "CORS preflight: browsers send it without credentials, and the mock integration answers only CORS headers", nil})
		}
	}
	if role := api.Node().TryFindChild(jsii.String("CloudWatchRole")); role != nil {
		suppress(role, nagReason{"AwsSolutions-IAM4", "AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API Gateway's account-wide logging role", nil})
	}
	stage := api.DeploymentStage()
	if !cfg.WAF {
		suppress(stage, nagReason{"AwsSolutions-APIG3", "wafWebAcl=false (the default): a web ACL costs about $8 a month idle plus $0.60 per million requests; the stage throttle, the per-key rate and the authorizer stand in front; turn it on with -c wafWebAcl=true", nil})
	}
	if !cfg.Tracing {
		suppress(stage, nagReason{"Serverless-APIGWXrayEnabled", "tracing=false: the operator turned X-Ray off for this stack", nil})
	}
}

// apiOrigin is the browser origin of the API's default endpoint, where the
// playground page is served.
func apiOrigin(api awsapigateway.RestApi) *string {
	return awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("https://"), api.RestApiId(),
		jsii.String(".execute-api."), awscdk.Aws_REGION(), jsii.String("."), awscdk.Aws_URL_SUFFIX()})
}

// integrationFor is a Lambda proxy integration. Functions that stream get
// every route streamed: they answer in the streaming framing always, so a
// buffered integration could not parse them.
func integrationFor(f function) awsapigateway.LambdaIntegration {
	opts := &awsapigateway.LambdaIntegrationOptions{
		Proxy:           jsii.Bool(true),
		AllowTestInvoke: jsii.Bool(false),
	}
	if f.spec.streams {
		opts.ResponseTransferMode = awsapigateway.ResponseTransferMode_STREAM
		opts.Timeout = awscdk.Duration_Minutes(jsii.Number(streamTimeoutMinutes))
	}
	return awsapigateway.NewLambdaIntegration(f.fn, opts)
}

// newAuthorizer is a REQUEST authorizer. API Gateway builds its cache key
// from the identity sources and answers 401 itself, without calling the
// authorizer, when any is missing, so with the cache on only the
// Authorization header can be one: listing X-API-Key too would demand both
// headers on every call. By default the cache is on and callers send
// Authorization: Bearer (the SDK, the playground and the README's examples
// do); acceptXApiKey trades the cache for accepting either header
// (infra/README, "API keys").
func newAuthorizer(stack awscdk.Stack, cfg Config, fn function) awsapigateway.RequestAuthorizer {
	props := &awsapigateway.RequestAuthorizerProps{
		Handler:         fn.fn,
		AuthorizerName:  jsii.String("sessionbox-" + cfg.Tenant),
		IdentitySources: jsii.Strings(*awsapigateway.IdentitySource_Header(jsii.String("Authorization"))),
		ResultsCacheTtl: awscdk.Duration_Minutes(jsii.Number(authCacheMinutes)),
	}
	if cfg.AcceptXAPIKey {
		props.IdentitySources = &[]*string{}
		props.ResultsCacheTtl = awscdk.Duration_Seconds(jsii.Number(0))
	}
	a := awsapigateway.NewRequestAuthorizer(stack, jsii.String("Authorizer"), props)
	if cfg.AcceptXAPIKey {
		// Without caching the identity source is optional; leaving it out
		// means API Gateway always calls the authorizer.
		a.Node().DefaultChild().(awscdk.CfnResource).AddPropertyDeletionOverride(jsii.String("IdentitySource"))
	}
	return a
}

func corsOptions(origins []string) *awsapigateway.CorsOptions {
	if len(origins) == 0 {
		return nil
	}
	return &awsapigateway.CorsOptions{
		AllowOrigins: jsii.Strings(origins...),
		AllowMethods: jsii.Strings("GET", "POST", "PUT", "DELETE", "OPTIONS"),
		// Every request header the OpenAPI document lists (pkg/api's
		// corsAllowHeaders answers the same locally).
		AllowHeaders: jsii.Strings("Authorization", "X-API-Key", "Content-Type", "Accept", "Idempotency-Key", "X-Request-Id",
			"Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"),
		ExposeHeaders: jsii.Strings("X-Request-Id", "Retry-After"),
		MaxAge:        awscdk.Duration_Hours(jsii.Number(1)),
	}
}

// accessLogFormat is one JSON object per request.
var accessLogFormat = "{" + strings.Join([]string{
	`"requestId":"$context.requestId"`,
	`"time":"$context.requestTime"`,
	`"ip":"$context.identity.sourceIp"`,
	`"method":"$context.httpMethod"`,
	`"resource":"$context.resourcePath"`,
	`"path":"$context.path"`,
	`"status":"$context.status"`,
	`"responseLength":"$context.responseLength"`,
	`"latencyMs":"$context.responseLatency"`,
	`"integrationLatencyMs":"$context.integration.latency"`,
	`"integrationStatus":"$context.integration.status"`,
	`"integrationError":"$context.integration.error"`,
	`"principal":"$context.authorizer.principalId"`,
	`"authorizerError":"$context.authorizer.error"`,
	`"errorType":"$context.error.responseType"`,
	`"userAgent":"$context.identity.userAgent"`,
}, ",") + "}"
