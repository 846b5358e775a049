package main

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// variant is what differs between the synthesized stacks under test.
type variant struct {
	retain        bool
	retentionDays float64
	rate, burst   float64
	origins       []string
	jwt           map[string]string // env name -> value; empty: none
	importedName  string            // e2b secret imported by name; "": created
	acceptXAPIKey bool
	noPlayground  bool // playground=false
	alarmTopic    string
	noAccountRole bool // apiGatewayCloudWatchRole=false
	// sessionEnv are the knobs given in context, by variable; e2b the
	// self-hosted E2B's domain and API URL; logLevel "" means INFO.
	sessionEnv map[string]string
	e2b        map[string]string
	logLevel   string
	// guards: the knobs that default to on are off (tracing, bucket
	// access logs) and those that default to off are on (WAF, deletion
	// protection, the reservations below).
	guards                                 bool
	authorizerConc, streamConc, reaperConc int
}

func obj(m map[string]any) assertions.Matcher { return assertions.Match_ObjectLike(&m) }
func arrWith(v ...any) assertions.Matcher     { return assertions.Match_ArrayWith(&v) }
func absent() assertions.Matcher              { return assertions.Match_Absent() }

func checkTable(t *testing.T, s synthed, v variant) {
	s.count(t, "AWS::DynamoDB::GlobalTable", 1)
	s.count(t, "AWS::DynamoDB::Table", 0)
	s.has(t, "AWS::DynamoDB::GlobalTable", map[string]any{
		"BillingMode": "PAY_PER_REQUEST",
		"KeySchema": []any{
			map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
			map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
		},
		"AttributeDefinitions": assertions.Match_ArrayWith(&[]any{
			map[string]any{"AttributeName": "pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			map[string]any{"AttributeName": "dueShard", "AttributeType": "S"},
			map[string]any{"AttributeName": "dueAt", "AttributeType": "N"},
		}),
		"GlobalSecondaryIndexes": []any{map[string]any{
			"IndexName": "byDeadline",
			"KeySchema": []any{
				map[string]any{"AttributeName": "dueShard", "KeyType": "HASH"},
				map[string]any{"AttributeName": "dueAt", "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "ALL"},
		}},
		"TimeToLiveSpecification": map[string]any{"AttributeName": "expiresAt", "Enabled": true},
		"Replicas": []any{obj(map[string]any{
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			// Protection would stop the rollback of a failed first create.
			"DeletionProtectionEnabled": v.guards,
			"Tags":                      arrWith(map[string]any{"Key": "tenant", "Value": s.tenant}),
		})},
	})
	// Retained, except when the create that made it rolls back (a retry
	// would otherwise find it in the way, or orphaned).
	policy, replace := retainPolicy(v.retain), map[bool]string{true: "Retain", false: "Delete"}[v.retain]
	s.hasResource(t, "AWS::DynamoDB::GlobalTable", map[string]any{"DeletionPolicy": policy, "UpdateReplacePolicy": replace})
}

func checkBucket(t *testing.T, s synthed, v variant) {
	buckets := 2 // the transfer bucket and its access logs
	if v.guards {
		buckets = 1
	}
	s.count(t, "AWS::S3::Bucket", buckets)
	bucketID, bucket := s.transferBucket(t)
	logging := props(bucket)["LoggingConfiguration"]
	if v.guards != (logging == nil) {
		t.Errorf("transfer bucket access logs %s, want them unless bucketAccessLogs=false", jsonOf(logging))
	}
	for id, b := range s.ofType("AWS::S3::Bucket") {
		if id == bucketID {
			continue
		}
		if ref(logging.(map[string]any)["DestinationBucketName"]) != id || b["DeletionPolicy"] != retainPolicy(v.retain) ||
			!strings.Contains(jsonOf(props(b)["LifecycleConfiguration"]), `"ExpirationInDays":90`) {
			t.Errorf("access log bucket %s, transfer bucket logging %s", jsonOf(b), jsonOf(logging))
		}
	}
	cors := any(absent())
	if len(v.origins) > 0 || !v.noPlayground {
		cors = map[string]any{"CorsRules": bucketCorsWant(t, s, v)}
	}
	s.has(t, "AWS::S3::Bucket", map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
		}},
		// Large run results are read through GET /v1/runs/{runId} as long
		// as the run record lives (7 days); transfers for a day.
		"LifecycleConfiguration": map[string]any{"Rules": []any{
			expiry("transfers/", 1), expiry("downloads/", 1), expiry("artifacts/", 1), expiry("runs/", 7), expiry("workspaces/", 37),
		}},
		"VersioningConfiguration": absent(),
		"CorsConfiguration":       cors,
	})
	// enforceSSL: a Deny for every request without TLS.
	s.has(t, "AWS::S3::BucketPolicy", map[string]any{"PolicyDocument": obj(map[string]any{
		"Statement": arrWith(obj(map[string]any{
			"Effect": "Deny", "Action": "s3:*",
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		})),
	})})
	if bucket["DeletionPolicy"] != retainPolicy(v.retain) {
		t.Errorf("transfer bucket DeletionPolicy %v, want %s", bucket["DeletionPolicy"], retainPolicy(v.retain))
	}
	// Emptying a bucket on delete would need a custom-resource Lambda
	// with wildcard S3 rights; the stack has none.
	s.count(t, "Custom::S3AutoDeleteObjects", 0)
}

// bucketCorsWant is the bucket's CORS rules: one for the allowed origins,
// one for the API's own origin, where the playground page is served.
func bucketCorsWant(t *testing.T, s synthed, v variant) []any {
	var rules []any
	if len(v.origins) > 0 {
		rules = append(rules, obj(map[string]any{"AllowedOrigins": toAny(v.origins), "AllowedMethods": []any{"GET", "PUT", "HEAD"}}))
	}
	if !v.noPlayground {
		apiID, _ := s.only(t, "AWS::ApiGateway::RestApi")
		origin := map[string]any{"Fn::Join": []any{"", []any{"https://", map[string]any{"Ref": apiID}, ".execute-api.",
			map[string]any{"Ref": "AWS::Region"}, ".", map[string]any{"Ref": "AWS::URLSuffix"}}}}
		rules = append(rules, obj(map[string]any{"AllowedOrigins": []any{origin}, "AllowedMethods": []any{"GET", "PUT", "HEAD"}}))
	}
	return rules
}

func expiry(prefix string, days int) any {
	return obj(map[string]any{
		"Status": "Enabled", "Prefix": prefix, "ExpirationInDays": days,
		"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1},
	})
}

func toAny(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

// fnWant is a function's expected size, written from the brief.
var fnWant = map[string]struct{ memory, timeout float64 }{
	"start": {512, 900}, "stop": {512, 900}, "status": {512, 29},
	"execute": {1024, 900}, "install": {1024, 900}, "fetch": {1024, 900}, "files": {1024, 29}, "mcp": {1024, 900},
	"runs": {1024, 900}, "reaper": {512, 900}, "authorizer": {256, 10},
}

func checkFunctions(t *testing.T, s synthed, v variant) {
	s.count(t, "AWS::Lambda::Function", len(functionNames))
	check(t, "every function", func() {
		s.tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Runtime":       "provided.al2023",
			"Architectures": []any{"arm64"},
			"Handler":       "bootstrap",
			"LoggingConfig": obj(map[string]any{
				"LogFormat": "JSON", "LogGroup": assertions.Match_AnyValue(),
				"ApplicationLogLevel": cmp.Or(v.logLevel, "INFO"), "SystemLogLevel": "INFO",
			}),
		})
	})
	for _, name := range functionNames {
		_, fn := s.function(t, name)
		want := fnWant[name]
		if fn["MemorySize"] != want.memory || fn["Timeout"] != want.timeout {
			t.Errorf("%s: memory %v timeout %v, want %v MB %v s", name, fn["MemorySize"], fn["Timeout"], want.memory, want.timeout)
		}
		tracing := map[bool]string{false: `{"Mode":"Active"}`, true: "null"}[v.guards]
		if mode := jsonOf(fn["TracingConfig"]); mode != tracing {
			t.Errorf("%s: tracing %s, want %s", name, mode, tracing)
		}
		if got, want := fn["ReservedConcurrentExecutions"], wantReserved(name, v); got != want {
			t.Errorf("%s: reserved concurrency %v, want %v", name, got, want)
		}
		lg := ref(fn["LoggingConfig"].(map[string]any)["LogGroup"])
		lgRes, ok := s.res[lg]
		if !ok || lgRes["Type"] != "AWS::Logs::LogGroup" {
			t.Errorf("%s: log group %q is not a log group of the stack", name, lg)
			continue
		}
		if d := props(lgRes)["RetentionInDays"]; d != v.retentionDays {
			t.Errorf("%s: log retention %v, want %v", name, d, v.retentionDays)
		}
	}
	// One log group per function plus the API's access log; no log
	// retention custom resource.
	s.count(t, "AWS::Logs::LogGroup", len(functionNames)+1)
	s.count(t, "Custom::LogRetention", 0)
}

// wantReserved is a function's ReservedConcurrentExecutions: none unless
// its knob is set (Lambda refuses reservations on a small account).
func wantReserved(name string, v variant) any {
	n := 0
	switch {
	case name == "authorizer":
		n = v.authorizerConc
	case name == "reaper":
		n = v.reaperConc
	case streamingFns[name]:
		n = v.streamConc
	}
	if n == 0 {
		return nil
	}
	return float64(n)
}

// e2bCallers are the functions that call E2B and may read its key.
var e2bCallers = map[string]bool{"start": true, "stop": true, "status": true, "execute": true, "files": true,
	"install": true, "fetch": true, "mcp": true, "runs": true, "reaper": true}

// apiFns serve API routes and must answer browsers with CORS headers.
var apiFns = map[string]bool{"start": true, "stop": true, "status": true, "execute": true, "files": true, "install": true, "fetch": true, "mcp": true}

func checkEnvironment(t *testing.T, s synthed, v variant) {
	tableID, _ := s.only(t, "AWS::DynamoDB::GlobalTable")
	bucketID, _ := s.transferBucket(t)
	busID, _ := s.only(t, "AWS::Events::EventBus")
	queueID, _ := s.only(t, "AWS::SQS::Queue")
	for _, name := range functionNames {
		_, fn := s.function(t, name)
		env, _ := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env["SESSIONBOX_TENANT"] != s.tenant {
			t.Errorf("%s: SESSIONBOX_TENANT = %v", name, env["SESSIONBOX_TENANT"])
		}
		for key, id := range map[string]string{"SESSIONBOX_TABLE": tableID, "SESSIONBOX_BUCKET": bucketID, "SESSIONBOX_EVENT_BUS": busID} {
			if ref(env[key]) != id {
				t.Errorf("%s: %s = %s, want a reference to %s", name, key, jsonOf(env[key]), id)
			}
		}
		_, hasSecret := env["SESSIONBOX_E2B_SECRET_ARN"]
		if hasSecret != e2bCallers[name] {
			t.Errorf("%s: SESSIONBOX_E2B_SECRET_ARN present = %v", name, hasSecret)
		}
		if hasSecret && v.importedName != "" && !strings.Contains(jsonOf(env["SESSIONBOX_E2B_SECRET_ARN"]), ":secret:"+v.importedName) {
			t.Errorf("%s: secret env %s does not name %s", name, jsonOf(env["SESSIONBOX_E2B_SECRET_ARN"]), v.importedName)
		}
		dlq, hasDLQ := env["SESSIONBOX_DLQ_URL"]
		if hasDLQ != (name == "runs") || (hasDLQ && ref(dlq) != queueID) {
			t.Errorf("%s: SESSIONBOX_DLQ_URL = %s", name, jsonOf(dlq))
		}
		origins, _ := env["SESSIONBOX_ALLOWED_ORIGINS"].(string)
		if want := strings.Join(v.origins, ","); apiFns[name] && origins != want || !apiFns[name] && origins != "" {
			t.Errorf("%s: SESSIONBOX_ALLOWED_ORIGINS = %q, want %q", name, origins, want)
		}
		// The session functions get every knob given, the stack's id and
		// the E2B endpoint; the authorizer none of them.
		want := map[string]string{}
		if e2bCallers[name] {
			maps.Copy(want, v.sessionEnv)
			maps.Copy(want, v.e2b)
		}
		// The tenant's name alone is the same in every account and region
		// sharing an E2B key: each deployment's sweep would kill the
		// others' sandboxes.
		wantID := ""
		if e2bCallers[name] {
			wantID = `{"Fn::Join":[":",[{"Ref":"AWS::AccountId"},{"Ref":"AWS::Region"},{"Ref":"AWS::StackName"}]]}`
		}
		if got, ok := env["SESSIONBOX_STACK_ID"]; ok != (wantID != "") || ok && jsonOf(got) != wantID {
			t.Errorf("%s: SESSIONBOX_STACK_ID = %s, want %s", name, jsonOf(got), wantID)
		}
		for _, k := range []string{"E2B_DOMAIN", "E2B_API_URL", "SESSIONBOX_TEMPLATE", "SESSIONBOX_IDLE_TIMEOUT_SECS",
			"SESSIONBOX_LIFETIME_SECS", "SESSIONBOX_EXEC_TIMEOUT_SECS", "SESSIONBOX_MAX_LIVE_SANDBOXES", "SESSIONBOX_REAP_BATCH",
			"SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL",
			"SESSIONBOX_MAX_OUTPUT_BYTES", "SESSIONBOX_MAX_RESULT_BYTES", "SESSIONBOX_ALLOW_INTERNET_ACCESS"} {
			if got, _ := env[k].(string); got != want[k] {
				t.Errorf("%s: %s = %q, want %q", name, k, got, want[k])
			}
		}
		// An authorizer whose answers are cached by Authorization reads
		// that header alone, or a cached identity would serve anyone
		// sending the same Authorization value beside another X-API-Key.
		bearerOnly, _ := env["SESSIONBOX_AUTH_BEARER_ONLY"].(string)
		if want := name == "authorizer" && !v.acceptXAPIKey; (bearerOnly == "true") != want || (!want && bearerOnly != "") {
			t.Errorf("%s: SESSIONBOX_AUTH_BEARER_ONLY = %q, want it set: %v", name, bearerOnly, want)
		}
		for _, k := range []string{"SESSIONBOX_JWT_ISSUER", "SESSIONBOX_JWT_AUDIENCE", "SESSIONBOX_JWT_JWKS_URL"} {
			want := ""
			if name == "authorizer" {
				want = v.jwt[k]
			}
			got, _ := env[k].(string)
			if got != want {
				t.Errorf("%s: %s = %q, want %q", name, k, got, want)
			}
		}
	}
}

// checkAssets: each function's asset is its bootstrap alone, executable;
// the zip make build leaves beside it stays out.
func checkAssets(t *testing.T, s synthed, _ variant) {
	dirs, err := filepath.Glob(filepath.Join(s.outdir, "asset.*"))
	if err != nil || len(dirs) != len(functionNames) {
		t.Fatalf("%d staged assets (%v), want one per function", len(dirs), err)
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "bootstrap" {
			t.Errorf("%s holds %v, want bootstrap alone", filepath.Base(d), entries)
			continue
		}
		if info, err := entries[0].Info(); err != nil || info.Mode()&0o111 == 0 {
			t.Errorf("%s/bootstrap is not executable", filepath.Base(d))
		}
	}
	for _, name := range functionNames {
		_, fn := s.function(t, name)
		key := jsonOf(fn["Code"].(map[string]any)["S3Key"])
		if !strings.HasSuffix(strings.Trim(key, `"`), ".zip") {
			t.Errorf("%s: code key %s", name, key)
		}
	}
}
