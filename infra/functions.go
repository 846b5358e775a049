package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/jsii-runtime-go"
)

// Environment variables the functions read (functions/<name>/main.go).
const (
	envTenant      = "SESSIONBOX_TENANT"
	envTable       = "SESSIONBOX_TABLE"
	envBucket      = "SESSIONBOX_BUCKET"
	envEventBus    = "SESSIONBOX_EVENT_BUS"
	envSecretARN   = "SESSIONBOX_E2B_SECRET_ARN"
	envDLQURL      = "SESSIONBOX_DLQ_URL"
	envJWTIssuer   = "SESSIONBOX_JWT_ISSUER"
	envJWTAudience = "SESSIONBOX_JWT_AUDIENCE"
	envJWTJWKSURL  = "SESSIONBOX_JWT_JWKS_URL"
	envOrigins     = "SESSIONBOX_ALLOWED_ORIGINS"
	envStackID     = "SESSIONBOX_STACK_ID"
	envBearerOnly  = "SESSIONBOX_AUTH_BEARER_ONLY"
	envE2BDomain   = "E2B_DOMAIN"
	envE2BAPIURL   = "E2B_API_URL"
	// The session knobs' variables are in sessionKnobs (config.go).
)

// fnSpec is one Lambda function: its size and whether it talks to E2B.
type fnSpec struct {
	name     string
	memoryMB float64
	timeout  awscdk.Duration
	e2b      bool
	// streams means API Gateway invokes it with response streaming, so its
	// routes may run up to the function timeout instead of 29 s.
	streams bool
	// api means it serves routes and so answers browsers with CORS headers.
	api bool
}

// bufferedSeconds is API Gateway's default integration timeout for a
// buffered (not streamed) REST integration. A function behind one must not
// run longer: past it the client has its 504 and retries while the first
// attempt goes on.
const bufferedSeconds = 29

func fnSpecs() []fnSpec {
	sec, minutes := awscdk.Duration_Seconds, awscdk.Duration_Minutes
	buffered := sec(jsii.Number(bufferedSeconds))
	return []fnSpec{
		// A start may restore a workspace and a stop checkpoints one (up to
		// 1 GiB): streamed, they may take longer than API Gateway's 29 s.
		{name: "start", api: true, memoryMB: 512, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		{name: "stop", api: true, memoryMB: 512, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		{name: "status", api: true, memoryMB: 512, timeout: buffered, e2b: true},
		{name: "execute", api: true, memoryMB: 1024, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		// files is buffered: it answers within the integration's 29 s, and
		// a copy that cannot finish by then fails rather than running on
		// after its client was told 504.
		{name: "files", api: true, memoryMB: 1024, timeout: buffered, e2b: true},
		{name: "install", api: true, memoryMB: 1024, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		// Uploads from URLs stream bodies through in constant memory; they
		// may take minutes, up to the session's URLUploads.RequestTimeout.
		{name: "fetch", api: true, memoryMB: 1024, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		// mcp serves /v1/mcp: MCP's tool calls run code as execute does.
		{name: "mcp", api: true, memoryMB: 1024, timeout: minutes(jsii.Number(15)), e2b: true, streams: true},
		{name: "runs", memoryMB: 1024, timeout: minutes(jsii.Number(15)), e2b: true},
		// A tick checkpoints before it kills or pauses; ticks overlap unless
		// reaperConcurrency reserves 1.
		{name: "reaper", memoryMB: 512, timeout: minutes(jsii.Number(15)), e2b: true},
		{name: "authorizer", memoryMB: 256, timeout: sec(jsii.Number(10))},
	}
}

// function is a built Lambda function with the role its grants go to.
type function struct {
	spec     fnSpec
	fn       awslambda.Function
	role     awsiam.Role
	logGroup awslogs.LogGroup
}

// checkDist fails early, naming every missing bootstrap, instead of letting
// the asset step fail on the first.
func checkDist(dir string) error {
	var errs []error
	for _, s := range fnSpecs() {
		p := filepath.Join(dir, s.name, "bootstrap")
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("missing %s", p))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("function builds not found (run `make build`, or pass -c %s=DIR): %w", ctxDistDir, errors.Join(errs...))
	}
	return nil
}

// newFunction creates the function with its own role (no managed policies:
// logging rights are granted on its own log group only) and log group.
func newFunction(stack awscdk.Stack, cfg Config, distDir string, s fnSpec, env map[string]*string) function {
	id := "Fn" + title(s.name)
	lg := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     retentionDays[cfg.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(fmt.Sprintf("sessionbox %s: %s function", cfg.Tenant, s.name)),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteOwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*lg.LogGroupArn()),
	}))
	fn := awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
		Description:  jsii.String(fmt.Sprintf("sessionbox %s (tenant %s)", s.name, cfg.Tenant)),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code: awslambda.Code_FromAsset(jsii.String(filepath.Join(distDir, s.name)), &awss3assets.AssetOptions{
			// The Makefile leaves <name>.zip beside bootstrap; the asset is bootstrap alone.
			Exclude: jsii.Strings("*.zip"),
		}),
		MemorySize:    jsii.Number(s.memoryMB),
		Timeout:       s.timeout,
		Role:          role,
		LogGroup:      lg,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// Go emits its own JSON through slog; this sets AWS_LAMBDA_LOG_LEVEL
		// for it (context logLevel). Platform lines stay at INFO: REPORT
		// carries init duration and memory used.
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(cfg.LogLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel_INFO,
		Environment:           &env,
		Tracing:               tracing(cfg),
		// nil leaves the function on the account's unreserved pool.
		ReservedConcurrentExecutions: reservedFor(cfg, s),
	})
	suppress(role, nagReason{"AwsSolutions-IAM5", "X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level permissions; every other grant names its resource",
		[]string{"Resource::*"}})
	suppress(fn, nagReason{"Serverless-LambdaDLQ", dlqReason(s), nil})
	if !cfg.Tracing {
		suppress(fn, nagReason{"Serverless-LambdaTracing", "tracing=false: the operator turned X-Ray off for this stack", nil})
	}
	return function{spec: s, fn: fn, role: role, logGroup: lg}
}

// dlqReason says why a function has no dead-letter queue of its own.
func dlqReason(s fnSpec) string {
	switch s.name {
	case "runs":
		return "async failures go to the runs dead-letter queue through the function's on-failure destination (EventInvokeConfig), which keeps the error with the event"
	case "reaper":
		return "a failed tick is not worth keeping: the next tick, a minute later, redoes its work; failing and stalled ticks raise alarms"
	}
	return "invoked synchronously (API Gateway): the caller receives the error, there is no event to keep"
}

// tracing is X-Ray active tracing; it adds xray:PutTraceSegments and
// xray:PutTelemetryRecords on "*" to the role (X-Ray has no resource-level
// permissions).
func tracing(cfg Config) awslambda.Tracing {
	if cfg.Tracing {
		return awslambda.Tracing_ACTIVE
	}
	return awslambda.Tracing_DISABLED
}

// reservedFor is the function's reserved concurrency from the knobs, nil
// for none. A reservation is also a cap: the streaming functions are
// capped so long streams cannot take the executions the authorizer and
// the short routes need.
func reservedFor(cfg Config, s fnSpec) *float64 {
	n := 0
	switch {
	case s.name == "authorizer":
		n = cfg.AuthorizerConcurrency
	case s.name == "reaper":
		n = cfg.ReaperConcurrency
	case s.streams:
		n = cfg.StreamConcurrency
	}
	if n == 0 {
		return nil
	}
	return jsii.Number(float64(n))
}

func title(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// retentionDays are the retentions CloudWatch Logs offers, by day count.
var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}
