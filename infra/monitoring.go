package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// api5xxPercent is the share of requests answered 5xx, over at least
// minRequests, that raises the API alarm.
const (
	api5xxPercent = 5
	minRequests   = 10
)

type monitored struct {
	cfg   Config
	fns   []function
	api   awsapigateway.RestApi
	dlq   awssqs.Queue
	topic awssns.ITopic // nil: alarms only show in the console
}

func minutes(n float64) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(n)) }

func sum(period float64) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minutes(period)}
}

// Missing data, decided per alarm (TreatMissingData is never left to
// CloudWatch's default, "missing"):
//   - quiet: the metric has a datapoint only when something happens, so no
//     data means nothing happened. Lambda publishes Errors and Throttles
//     only for periods with invocations or throttles; the authorizer's
//     AuthFailures (EMF, pkg/lambdaenv) only in periods with a failure;
//     SQS stops publishing for an empty, idle queue; the 5xx rate has no
//     value without requests.
//   - silent: no data is the failure itself. The reaper runs every minute,
//     so a period without its Invocations means the schedule or the
//     function is broken.
var (
	quiet  = awscloudwatch.TreatMissingData_NOT_BREACHING
	silent = awscloudwatch.TreatMissingData_BREACHING
)

// alarmSpec is one alarm before it exists.
type alarmSpec struct {
	id, desc  string
	metric    awscloudwatch.IMetric
	threshold float64
	periods   float64
	cmp       awscloudwatch.ComparisonOperator
	missing   awscloudwatch.TreatMissingData
}

// addAlarms: errors and throttles per function, dead letters, a stalled or
// failing reaper and the API's 5xx rate.
func addAlarms(stack awscdk.Stack, m monitored) []awscloudwatch.Alarm {
	var alarms []awscloudwatch.Alarm
	for _, s := range alarmSpecs(m) {
		a := awscloudwatch.NewAlarm(stack, jsii.String(s.id), &awscloudwatch.AlarmProps{
			Metric:             s.metric,
			AlarmDescription:   jsii.String(fmt.Sprintf("sessionbox %s: %s", m.cfg.Tenant, s.desc)),
			Threshold:          jsii.Number(s.threshold),
			EvaluationPeriods:  jsii.Number(s.periods),
			DatapointsToAlarm:  jsii.Number(s.periods),
			ComparisonOperator: s.cmp,
			TreatMissingData:   s.missing,
		})
		if m.topic != nil {
			a.AddAlarmAction(awscloudwatchactions.NewSnsAction(m.topic))
			a.AddOkAction(awscloudwatchactions.NewSnsAction(m.topic))
		}
		alarms = append(alarms, a)
	}
	return alarms
}

func alarmSpecs(m monitored) []alarmSpec {
	atLeast := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	above := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	var out []alarmSpec
	for _, f := range m.fns {
		n := title(f.spec.name)
		if f.spec.name == "authorizer" {
			// Every refused key is a function error to Lambda (that is how
			// an authorizer answers 401): only real failures page.
			out = append(out, alarmSpec{"AlarmAuthorizerFailures", "authorizer failures (not refusals)", authMetric(m.cfg, metricAuthFailures), 1, 1, atLeast, quiet})
		} else {
			out = append(out, alarmSpec{"Alarm" + n + "Errors", f.spec.name + " function errors", f.fn.MetricErrors(sum(5)), 1, 1, atLeast, quiet})
		}
		// A reaper with reserved concurrency 1 is throttled by design when
		// a tick outlasts the minute; a reaper that stops running shows as
		// stalled instead.
		if f.spec.name != "reaper" || m.cfg.ReaperConcurrency == 0 {
			out = append(out, alarmSpec{"Alarm" + n + "Throttles", f.spec.name + " function throttled", f.fn.MetricThrottles(sum(5)), 1, 1, atLeast, quiet})
		}
		if f.spec.name != "reaper" {
			continue
		}
		out = append(out,
			alarmSpec{"AlarmReaperFailing", "reaper failed three ticks in a row", f.fn.MetricErrors(sum(1)), 1, 3, atLeast, quiet},
			alarmSpec{"AlarmReaperStalled", "reaper not invoked for 10 minutes (schedule broken?)", f.fn.MetricInvocations(sum(10)), 1, 1,
				awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, silent})
	}
	return append(out,
		alarmSpec{"AlarmDeadLetters", "run requests in the dead-letter queue",
			m.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minutes(5)}),
			0, 1, above, quiet},
		alarmSpec{"AlarmApi5xxRate", fmt.Sprintf("more than %d%% of API requests answered 5xx", api5xxPercent), api5xxRate(m.api), api5xxPercent, 1, above, quiet})
}

// api5xxRate is the percentage of 5xx answers, zero while traffic is too
// thin for a rate to mean anything.
func api5xxRate(api awsapigateway.RestApi) awscloudwatch.MathExpression {
	stage := api.DeploymentStage()
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %d, 100 * errors / requests, 0)", minRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":   stage.MetricServerError(sum(5)),
			"requests": stage.MetricCount(sum(5)),
		},
		Label:  jsii.String("5xx %"),
		Period: minutes(5),
	})
}

// The authorizer's embedded metrics (pkg/lambdaenv), one of them 1 per
// invocation, in namespace sessionbox with the tenant as dimension.
const (
	metricsNamespace   = "sessionbox"
	metricAuthAllowed  = "AuthAllowed"
	metricAuthRefusals = "AuthRefusals"
	metricAuthFailures = "AuthFailures"
)

func authMetric(cfg Config, name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(metricsNamespace), MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{"tenant": jsii.String(cfg.Tenant)},
		Statistic:     jsii.String("Sum"), Period: minutes(5),
	})
}

func addDashboard(stack awscdk.Stack, m monitored, alarms []awscloudwatch.Alarm) awscloudwatch.Dashboard {
	d := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String("sessionbox-" + m.cfg.Tenant),
	})
	stage := m.api.DeploymentStage()
	d.AddWidgets(
		graph("API requests and errors", stage.MetricCount(sum(5)), stage.MetricClientError(sum(5)), stage.MetricServerError(sum(5))),
		graph("API latency p90 (ms)", stage.MetricLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90")}),
			stage.MetricIntegrationLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90")})),
		graph("Run dead letters", m.dlq.MetricApproximateNumberOfMessagesVisible(nil)),
		graph("Authorizer", authMetric(m.cfg, metricAuthAllowed), authMetric(m.cfg, metricAuthRefusals), authMetric(m.cfg, metricAuthFailures)),
	)
	var inv, errs, dur []awscloudwatch.IMetric
	for _, f := range m.fns {
		label := &awscloudwatch.MetricOptions{Label: jsii.String(f.spec.name), Statistic: jsii.String("Sum")}
		inv = append(inv, f.fn.MetricInvocations(label))
		errs = append(errs, f.fn.MetricErrors(label))
		dur = append(dur, f.fn.MetricDuration(&awscloudwatch.MetricOptions{Label: jsii.String(f.spec.name), Statistic: jsii.String("p90")}))
	}
	d.AddWidgets(graph("Invocations", inv...), graph("Errors", errs...), graph("Duration p90 (ms)", dur...))
	var alarmList []interfacesawscloudwatch.IAlarmRef
	for _, a := range alarms {
		alarmList = append(alarmList, a)
	}
	d.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Alarms"), Alarms: &alarmList, Width: jsii.Number(24),
	}))
	return d
}

func graph(title string, metrics ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title), Left: &metrics, Width: jsii.Number(8),
	})
}
