package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
)

func checkEvents(t *testing.T, s synthed) {
	busID, bus := s.only(t, "AWS::Events::EventBus")
	if props(bus)["Name"] != "sessionbox-"+s.tenant {
		t.Errorf("bus name %v", props(bus)["Name"])
	}
	queueID, q := s.only(t, "AWS::SQS::Queue")
	if props(q)["SqsManagedSseEnabled"] != true {
		t.Errorf("dead-letter queue not encrypted: %s", jsonOf(props(q)))
	}
	runsID, _ := s.function(t, "runs")
	reaperID, _ := s.function(t, "reaper")
	_, rule := s.only(t, "AWS::Events::Rule")
	p := props(rule)
	if ref(p["EventBusName"]) != busID {
		t.Errorf("rule on bus %s", jsonOf(p["EventBusName"]))
	}
	if jsonOf(p["EventPattern"]) != `{"detail-type":["Run Requested"],"source":["sessionbox"]}` {
		t.Errorf("rule pattern %s", jsonOf(p["EventPattern"]))
	}
	targets := p["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("%d rule targets", len(targets))
	}
	tg := targets[0].(map[string]any)
	if ref(tg["Arn"]) != runsID || ref(tg["DeadLetterConfig"].(map[string]any)["Arn"]) != queueID {
		t.Errorf("rule target %s", jsonOf(tg))
	}
	if jsonOf(tg["RetryPolicy"]) != `{"MaximumEventAgeInSeconds":7200,"MaximumRetryAttempts":8}` {
		t.Errorf("rule retry policy %s", jsonOf(tg["RetryPolicy"]))
	}
	// EventBridge may put to the queue only for this rule.
	s.has(t, "AWS::SQS::QueuePolicy", map[string]any{"PolicyDocument": obj(map[string]any{
		"Statement": arrWith(obj(map[string]any{
			"Effect": "Allow", "Action": "sqs:SendMessage",
			"Principal": map[string]any{"Service": "events.amazonaws.com"},
			"Condition": obj(map[string]any{"ArnEquals": obj(map[string]any{"aws:SourceArn": assertions.Match_AnyValue()})}),
		})),
	})})
	configs := map[string]map[string]any{}
	for _, c := range s.ofType("AWS::Lambda::EventInvokeConfig") {
		configs[ref(props(c)["FunctionName"])] = props(c)
	}
	if len(configs) != 2 {
		t.Errorf("%d async invoke configs, want runs and reaper", len(configs))
	}
	if cp := configs[runsID]; cp["MaximumRetryAttempts"] != 2.0 || cp["MaximumEventAgeInSeconds"] != 3600.0 ||
		!strings.Contains(jsonOf(cp["DestinationConfig"]), queueID) {
		t.Errorf("runs async config %s", jsonOf(cp))
	}
	// Scheduler's RetryAttempts does not stop Lambda retrying a failed
	// async invocation twice: the function's own config does.
	if cp := configs[reaperID]; cp["MaximumRetryAttempts"] != 0.0 || cp["MaximumEventAgeInSeconds"] != 60.0 {
		t.Errorf("reaper async config %s, want no retries and a 60 s event age", jsonOf(cp))
	}
	_, sch := s.only(t, "AWS::Scheduler::Schedule")
	sp := props(sch)
	target := sp["Target"].(map[string]any)
	if sp["ScheduleExpression"] != "rate(1 minute)" || sp["State"] != "ENABLED" || ref(target["Arn"]) != reaperID {
		t.Errorf("reaper schedule %s", jsonOf(sp))
	}
	// The input the reaper logs (events/reaper/scheduler-tick.json).
	if in, _ := target["Input"].(string); !strings.Contains(in, `"executionId":"<aws.scheduler.execution-id>"`) ||
		!strings.Contains(in, `"scheduledTime":"<aws.scheduler.scheduled-time>"`) {
		t.Errorf("schedule input %s", jsonOf(target["Input"]))
	}
	if jsonOf(target["RetryPolicy"]) != `{"MaximumEventAgeInSeconds":60,"MaximumRetryAttempts":0}` {
		t.Errorf("schedule retry %s", jsonOf(target["RetryPolicy"]))
	}
	// The scheduler's role may invoke the reaper and nothing else.
	st := s.statementsOf(ref(target["RoleArn"]))
	if acts := actionsOf(st); !equal(acts, []string{"lambda:InvokeFunction"}) || !strings.Contains(jsonOf(st[0].resources), reaperID) {
		t.Errorf("scheduler role may %v on %v", acts, st)
	}
}

// statementsOf returns the Allow statements of the policies on a role.
func (s synthed) statementsOf(role string) []stmt {
	var out []stmt
	for id, p := range s.ofType("AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if ref(r) == role {
				walkStatements(id, props(p)["PolicyDocument"], &out)
			}
		}
	}
	return out
}

func checkSecret(t *testing.T, s synthed, v variant) {
	secrets := s.ofType("AWS::SecretsManager::Secret")
	if v.importedName != "" {
		if len(secrets) != 0 {
			t.Errorf("secret imported by name, yet the stack creates %d", len(secrets))
		}
		return
	}
	s.count(t, "AWS::SecretsManager::Secret", 1)
	s.has(t, "AWS::SecretsManager::Secret", map[string]any{
		"Name":                 "sessionbox/" + s.tenant + "/e2b-api-key",
		"SecretString":         absent(),
		"GenerateSecretString": map[string]any{},
	})
	s.hasResource(t, "AWS::SecretsManager::Secret", map[string]any{"DeletionPolicy": retainPolicy(v.retain)})
}

func checkAlarms(t *testing.T, s synthed, v variant) {
	alarms := s.ofType("AWS::CloudWatch::Alarm")
	// errors and throttles per function, reaper failing and stalled,
	// dead letters, API 5xx rate; no reaper throttles alarm when its
	// reservation of 1 throttles overlapping ticks by design.
	want := 2*len(functionNames) + 4
	if v.reaperConc > 0 {
		want--
	}
	if len(alarms) != want {
		t.Errorf("%d alarms, want %d", len(alarms), want)
	}
	for id, a := range alarms {
		// Chosen per alarm: only a stalled reaper breaches on no data.
		want := "notBreaching"
		if strings.Contains(id, "ReaperStalled") {
			want = "breaching"
		}
		if got := props(a)["TreatMissingData"]; got != want {
			t.Errorf("%s: TreatMissingData %v, want %s", id, got, want)
		}
	}
	byDesc := map[string]map[string]any{}
	for _, a := range alarms {
		d, _ := props(a)["AlarmDescription"].(string)
		byDesc[strings.TrimPrefix(d, "sessionbox "+s.tenant+": ")] = props(a)
		if v.alarmTopic != "" && jsonOf(props(a)["AlarmActions"]) != `["`+v.alarmTopic+`"]` {
			t.Errorf("alarm %q actions %s", d, jsonOf(props(a)["AlarmActions"]))
		}
		if v.alarmTopic == "" && props(a)["AlarmActions"] != nil {
			t.Errorf("alarm %q has actions without a topic", d)
		}
	}
	for _, name := range functionNames {
		id, _ := s.function(t, name)
		for suffix, metric := range map[string]string{" function errors": "Errors", " function throttled": "Throttles"} {
			if name == "authorizer" && metric == "Errors" {
				continue // below: a wrong key must not page
			}
			if name == "reaper" && metric == "Throttles" && v.reaperConc > 0 {
				continue
			}
			a, ok := byDesc[name+suffix]
			if !ok {
				t.Errorf("no alarm %q", name+suffix)
				continue
			}
			if a["MetricName"] != metric || a["Namespace"] != "AWS/Lambda" || !strings.Contains(jsonOf(a["Dimensions"]), id) ||
				a["Threshold"] != 1.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
				t.Errorf("alarm %q: %s", name+suffix, jsonOf(a))
			}
		}
	}
	if _, ok := byDesc["authorizer function errors"]; ok {
		t.Error("an alarm on the authorizer's Errors pages on every refused key")
	}
	af := byDesc["authorizer failures (not refusals)"]
	if af["MetricName"] != "AuthFailures" || af["Namespace"] != "sessionbox" || af["Statistic"] != "Sum" ||
		jsonOf(af["Dimensions"]) != `[{"Name":"tenant","Value":"`+s.tenant+`"}]` || af["Threshold"] != 1.0 ||
		af["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || af["TreatMissingData"] != "notBreaching" {
		t.Errorf("authorizer failures alarm %s", jsonOf(af))
	}
	queueID, _ := s.only(t, "AWS::SQS::Queue")
	dl := byDesc["run requests in the dead-letter queue"]
	if dl["MetricName"] != "ApproximateNumberOfMessagesVisible" || dl["Threshold"] != 0.0 ||
		dl["ComparisonOperator"] != "GreaterThanThreshold" || !strings.Contains(jsonOf(dl["Dimensions"]), queueID) {
		t.Errorf("dead-letter alarm %s", jsonOf(dl))
	}
	if r := byDesc["reaper failed three ticks in a row"]; r["EvaluationPeriods"] != 3.0 || r["MetricName"] != "Errors" {
		t.Errorf("reaper failing alarm %s", jsonOf(r))
	}
	if r := byDesc["reaper not invoked for 10 minutes (schedule broken?)"]; r["TreatMissingData"] != "breaching" || r["MetricName"] != "Invocations" {
		t.Errorf("reaper stalled alarm %s", jsonOf(r))
	}
	api := byDesc["more than 5% of API requests answered 5xx"]
	if m := jsonOf(api["Metrics"]); !strings.Contains(m, "100 * errors / requests") || !strings.Contains(m, `"5XXError"`) || !strings.Contains(m, `"Count"`) {
		t.Errorf("API 5xx alarm metrics %s", m)
	}
	_, d := s.only(t, "AWS::CloudWatch::Dashboard")
	if props(d)["DashboardName"] != "sessionbox-"+s.tenant {
		t.Errorf("dashboard name %v", props(d)["DashboardName"])
	}
	if body := jsonOf(props(d)["DashboardBody"]); !strings.Contains(body, "Invocations") || !strings.Contains(body, "5XXError") {
		t.Errorf("dashboard lacks Lambda or API widgets")
	}
}

func checkOutputs(t *testing.T, s synthed) {
	tableID, _ := s.only(t, "AWS::DynamoDB::GlobalTable")
	bucketID, _ := s.transferBucket(t)
	busID, _ := s.only(t, "AWS::Events::EventBus")
	apiID, _ := s.only(t, "AWS::ApiGateway::RestApi")
	want := map[string]string{"ApiUrl": apiID, "TableName": tableID, "BucketName": bucketID, "EventBusName": busID, "E2BSecretArn": ":secret"}
	for name, part := range want {
		o, ok := s.out[name].(map[string]any)
		if !ok {
			t.Errorf("no output %s", name)
			continue
		}
		if v := jsonOf(o["Value"]); !strings.Contains(v, part) && !strings.Contains(v, "E2BApiKey") {
			t.Errorf("output %s = %s, want it to name %s", name, v, part)
		}
	}
}

// untaggable are types CloudFormation cannot tag.
var untaggable = map[string]bool{
	"AWS::ApiGateway::Account": true, "AWS::ApiGateway::Authorizer": true, "AWS::ApiGateway::Deployment": true,
	"AWS::ApiGateway::GatewayResponse": true, "AWS::ApiGateway::Method": true, "AWS::ApiGateway::Resource": true,
	"AWS::IAM::Policy": true, "AWS::Lambda::Permission": true, "AWS::Lambda::EventInvokeConfig": true,
	"AWS::S3::BucketPolicy": true, "AWS::SQS::QueuePolicy": true, "AWS::Scheduler::Schedule": true,
	"AWS::WAFv2::WebACLAssociation": true,
	"AWS::CDK::Metadata":            true,
	"AWS::DynamoDB::GlobalTable":    true, // tagged per replica, checked with the table
}

func checkTags(t *testing.T, s synthed) {
	for id, r := range s.res {
		typ := r["Type"].(string)
		if untaggable[typ] {
			continue
		}
		tags := jsonOf(props(r)["Tags"])
		if !strings.Contains(tags, `{"Key":"tenant","Value":"`+s.tenant+`"}`) {
			t.Errorf("%s (%s) not tagged tenant=%s: %s", id, typ, s.tenant, tags)
		}
	}
}
