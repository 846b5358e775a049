package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

func stackName(tenant string) string { return "sessionbox-" + tenant }

// Build reads the app's context and adds the tenant's stack to it.
func Build(app awscdk.App) (awscdk.Stack, error) {
	node := app.Node()
	cfg, err := ConfigFromContext(func(key string) any { return node.TryGetContext(jsii.String(key)) })
	if err != nil {
		return nil, err
	}
	return NewTenantStack(app, cfg)
}

// NewTenantStack is one tenant's whole deployment (docs/architecture.md,
// "Infrastructure"). It is environment-agnostic: synth needs no AWS credentials and
// deploy targets whatever account and region the CLI runs with.
func NewTenantStack(scope constructs.Construct, cfg Config) (awscdk.Stack, error) {
	dist, err := resolveDistDir(cfg.DistDir)
	if err != nil {
		return nil, err
	}
	if err := checkDist(dist); err != nil {
		return nil, err
	}
	stack := awscdk.NewStack(scope, jsii.String(stackName(cfg.Tenant)), &awscdk.StackProps{
		StackName:   jsii.String(stackName(cfg.Tenant)),
		Description: jsii.String("sessionbox for tenant " + cfg.Tenant),
		Tags:        &map[string]*string{"tenant": jsii.String(cfg.Tenant), "app": jsii.String("sessionbox")},
	})
	awscdk.Tags_Of(stack).Add(jsii.String("tenant"), jsii.String(cfg.Tenant), nil)
	awscdk.Tags_Of(stack).Add(jsii.String("app"), jsii.String("sessionbox"), nil)

	r := resources{
		table:  newTable(stack, cfg),
		bucket: newBucket(stack, cfg),
		bus:    newBus(stack, cfg),
		dlq:    newDeadLetterQueue(stack),
		secret: newE2BSecret(stack, cfg),
	}
	fns := addFunctions(stack, cfg, dist, r)
	runRequestRule(stack, r.bus, fns["runs"], r.dlq)
	reaperSchedule(stack, cfg, fns["reaper"])
	api := newRestAPI(stack, cfg, fns)
	if cfg.Playground {
		// The playground page, served by the API, uploads large files
		// through presigned URLs: the bucket answers its origin too.
		r.bucket.AddCorsRule(bucketCorsRule(&[]*string{apiOrigin(api.api)}))
	}

	m := monitored{cfg: cfg, api: api.api, dlq: r.dlq}
	for _, s := range fnSpecs() {
		m.fns = append(m.fns, fns[s.name])
	}
	if cfg.AlarmTopicARN != "" {
		m.topic = awssns.Topic_FromTopicArn(stack, jsii.String("AlarmTopic"), jsii.String(cfg.AlarmTopicARN))
	}
	addDashboard(stack, m, addAlarms(stack, m))
	addOutputs(stack, api, r)
	addNagPacks(stack)
	return stack, nil
}

// addFunctions creates the functions with their environment and grants.
func addFunctions(stack awscdk.Stack, cfg Config, dist string, r resources) map[string]function {
	fns := map[string]function{}
	for _, s := range fnSpecs() {
		f := newFunction(stack, cfg, dist, s, environmentFor(cfg, s, r))
		for _, st := range grantsFor(s.name, r) {
			f.role.AddToPolicy(st)
		}
		suppress(f.role, nagReason{"AwsSolutions-IAM5",
			"object grants cover one key prefix of the tenant's bucket (infra/README, Functions); keys under it are made per session and transfer",
			[]string{`/^Resource::<TransferBucket[0-9A-F]+\.Arn>\/[a-z-]+\/\*$/`}})
		if !r.secret.created {
			suppress(f.role, nagReason{"AwsSolutions-IAM5",
				"an imported secret's ARN ends in a random six-character suffix the stack cannot know; the pattern matches that one secret",
				[]string{`/^Resource::arn:<AWS::Partition>:secretsmanager:.*-\?{6}$/`}})
		}
		if s.e2b {
			f.role.AddToPolicy(secretRead(r))
		}
		fns[s.name] = f
	}
	runs := fns["runs"]
	// Async invocations that fail every retry land in the same queue as
	// undeliverable run requests.
	runs.fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		OnFailure:     awslambdadestinations.NewSqsDestination(r.dlq),
		RetryAttempts: jsii.Number(asyncRetryAttempts),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(asyncMaxEventAgeHrs)),
	})
	// Scheduler invokes the reaper asynchronously, and its own RetryAttempts
	// covers only failed deliveries: without this Lambda would retry a
	// failed tick twice, and hold a throttled one for up to six hours.
	// The next tick comes a minute later and does the same work.
	fns["reaper"].fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(reaperMaxEventAgeSecs)),
	})
	suppress(fns["reaper"].fn, nagReason{"Serverless-LambdaAsyncFailureDestination",
		"a failed reaper tick is dropped on purpose (the next one redoes it); AlarmReaperFailing and AlarmReaperStalled report failures", nil})
	return fns
}

func environmentFor(cfg Config, s fnSpec, r resources) map[string]*string {
	env := map[string]*string{
		envTenant:   jsii.String(cfg.Tenant),
		envTable:    r.table.TableName(),
		envBucket:   r.bucket.BucketName(),
		envEventBus: r.bus.EventBusName(),
	}
	if s.e2b {
		env[envSecretARN] = jsii.String(r.secret.arn)
		// The orphan sweep kills only sandboxes carrying this id, and one E2B
		// key may serve this tenant's stack in several accounts and regions:
		// <account>:<region>:<stack name> tells them apart, and stays the
		// same when a failed create is retried or the stack is replaced.
		env[envStackID] = awscdk.Fn_Join(jsii.String(":"), &[]*string{awscdk.Aws_ACCOUNT_ID(), awscdk.Aws_REGION(), awscdk.Aws_STACK_NAME()})
		for k, v := range map[string]string{envE2BDomain: cfg.E2BDomain, envE2BAPIURL: cfg.E2BAPIURL} {
			if v != "" {
				env[k] = jsii.String(v)
			}
		}
		for k, v := range cfg.SessionEnv {
			env[k] = jsii.String(v)
		}
	}
	if s.api && len(cfg.AllowedOrigins) > 0 {
		// API Gateway answers the preflight; the function's own responses
		// need the same origins.
		env[envOrigins] = jsii.String(strings.Join(cfg.AllowedOrigins, ","))
	}
	switch s.name {
	case "runs":
		env[envDLQURL] = r.dlq.QueueUrl()
	case "authorizer":
		if !cfg.AcceptXAPIKey {
			// API Gateway caches the answer keyed on Authorization: the key
			// must come from that header alone (newAuthorizer).
			env[envBearerOnly] = jsii.String("true")
		}
		for k, v := range map[string]string{envJWTIssuer: cfg.JWTIssuer, envJWTAudience: cfg.JWTAudience, envJWTJWKSURL: cfg.JWTJWKSURL} {
			if v != "" {
				env[k] = jsii.String(v)
			}
		}
	}
	return env
}

func addOutputs(stack awscdk.Stack, api restAPI, r resources) {
	out := func(id string, v *string, desc string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v, Description: jsii.String(desc)})
	}
	out("ApiUrl", api.api.Url(), "base URL of the API (append v1/...)")
	out("TableName", r.table.TableName(), "DynamoDB table (sessionbox keys create --table ...)")
	out("BucketName", r.bucket.BucketName(), "S3 transfer bucket")
	out("EventBusName", r.bus.EventBusName(), "EventBridge bus for Run Requested / Run Completed")
	out("E2BSecretArn", jsii.String(r.secret.arn), "Secrets Manager secret holding the E2B API key")
	out("DeadLetterQueueUrl", r.dlq.QueueUrl(), "SQS dead-letter queue for failed runs")
}

// resolveDistDir: "" is <repository root>/dist; a relative path is taken
// from the repository root, where cdk.json and the Makefile live.
func resolveDistDir(dir string) (string, error) {
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	if dir == "" {
		dir = "dist"
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, dir), nil
}

// repoRoot walks up from the working directory to the one holding cdk.json.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no cdk.json above " + wd + ": run from the repository, or pass an absolute -c distDir")
		}
	}
}
