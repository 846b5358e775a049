package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Retry budgets for run requests. EventBridge retries only deliveries it
// could not hand to Lambda; Lambda then retries failed async invocations.
// The runs function is idempotent by run id, so a retry never runs twice.
const (
	ruleRetryAttempts   = 8
	ruleMaxEventAgeHrs  = 2
	asyncRetryAttempts  = 2
	asyncMaxEventAgeHrs = 1
	dlqRetentionDays    = 14
	// reaperMaxEventAgeSecs is the least Lambda allows: a tick older than
	// that is stale, the next one is due.
	reaperMaxEventAgeSecs = 60
)

func busName(tenant string) string { return "sessionbox-" + tenant }

func newBus(stack awscdk.Stack, cfg Config) awsevents.EventBus {
	return awsevents.NewEventBus(stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(busName(cfg.Tenant)),
		Description:  jsii.String("sessionbox run requests and completions for tenant " + cfg.Tenant),
	})
}

// newDeadLetterQueue receives run requests that could not be delivered,
// async invocations of the runs function that failed every retry, and the
// failures the runs function reports itself.
func newDeadLetterQueue(stack awscdk.Stack) awssqs.Queue {
	q := awssqs.NewQueue(stack, jsii.String("RunsDeadLetterQueue"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(dlqRetentionDays)),
	})
	const why = "this queue is the dead-letter queue (of the run rule and the runs function); nothing consumes it, so nothing redrives from it"
	suppress(q, nagReason{"AwsSolutions-SQS3", why, nil}, nagReason{"Serverless-SQSRedrivePolicy", why, nil})
	return q
}

// runRequestRule sends "Run Requested" events on the tenant bus to runs.
func runRequestRule(stack awscdk.Stack, bus awsevents.EventBus, runs function, dlq awssqs.Queue) awsevents.Rule {
	rule := awsevents.NewRule(stack, jsii.String("RunRequestedRule"), &awsevents.RuleProps{
		EventBus:    bus,
		Description: jsii.String("Run Requested -> runs function"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(eventSource),
			DetailType: jsii.Strings(typeRunRequested),
		},
	})
	rule.AddTarget(awseventstargets.NewLambdaFunction(runs.fn, &awseventstargets.LambdaFunctionProps{
		DeadLetterQueue: dlq,
		RetryAttempts:   jsii.Number(ruleRetryAttempts),
		MaxEventAge:     awscdk.Duration_Hours(jsii.Number(ruleMaxEventAgeHrs)),
	}))
	return rule
}

// reaperSchedule ticks the reaper every minute. A missed tick is not
// retried: the next one comes a minute later and does the same work.
func reaperSchedule(stack awscdk.Stack, cfg Config, reaper function) awsscheduler.Schedule {
	defer func() {
		// CDK's shared role for Scheduler targets may invoke the function
		// and its versions (ARN:*); it is made once per stack, by a hashed id.
		for _, c := range *stack.Node().Children() {
			if strings.HasPrefix(*c.Node().Id(), "SchedulerRoleForTarget-") {
				suppress(c, nagReason{"AwsSolutions-IAM5", "lambda:InvokeFunction on the reaper and its versions (ARN:*), as CDK's Scheduler target grants it", nil})
			}
		}
	}()
	return awsscheduler.NewSchedule(stack, jsii.String("ReaperSchedule"), &awsscheduler.ScheduleProps{
		Description: jsii.String("sessionbox reaper tick for tenant " + cfg.Tenant),
		Schedule:    awsscheduler.ScheduleExpression_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Target: awsschedulertargets.NewLambdaInvoke(reaper.fn, &awsschedulertargets.ScheduleTargetBaseProps{
			// What the reaper logs with each tick (events/reaper); it
			// reaps on any payload.
			Input: awsscheduler.ScheduleTargetInput_FromObject(map[string]any{
				"executionId":   awsscheduler.ContextAttribute_ExecutionId(),
				"scheduledTime": awsscheduler.ContextAttribute_ScheduledTime(),
			}),
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
		}),
	})
}
