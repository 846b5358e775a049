package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checks run on every variant.
var checks = []struct {
	name string
	fn   func(*testing.T, synthed, variant)
}{
	{"table", checkTable},
	{"bucket", checkBucket},
	{"functions", checkFunctions},
	{"function assets", checkAssets},
	{"environment", checkEnvironment},
	{"least privilege per function", checkGrants},
	{"no wildcard actions", func(t *testing.T, s synthed, _ variant) { checkNoWildcards(t, s) }},
	{"grant scopes", func(t *testing.T, s synthed, _ variant) { checkGrantScopes(t, s) }},
	{"routes", checkRoutes},
	{"authorizer", checkAuthorizer},
	{"stage", checkStage},
	{"gateway problems", checkGatewayResponses},
	{"events", func(t *testing.T, s synthed, _ variant) { checkEvents(t, s) }},
	{"secret", checkSecret},
	{"alarms and dashboard", checkAlarms},
	{"outputs", func(t *testing.T, s synthed, _ variant) { checkOutputs(t, s) }},
	{"tags", func(t *testing.T, s synthed, _ variant) { checkTags(t, s) }},
	{"cdk-nag", checkNag},
}

func runChecks(t *testing.T, s synthed, v variant) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s, v) })
	}
}

// TestDefaultStack: only the tenant given; everything else defaults.
func TestDefaultStack(t *testing.T) {
	s := synth(t, map[string]any{"tenant": "acme", "distDir": fakeDist(t)})
	runChecks(t, s, variant{retain: true, retentionDays: 30, rate: 50, burst: 100})
	t.Run("README", func(t *testing.T) { checkReadme(t, s) })
}

// TestConfiguredStack: imported secret, JWT, browser origins, dev removal,
// X-API-Key without the cache, tracing and bucket access logs off, WAF,
// deletion protection and reserved concurrency on, custom throttling, retention and alarm topic,
// no account-wide API Gateway role, values typed as the CLI passes them
// (strings) and as cdk.json does.
func TestConfiguredStack(t *testing.T) {
	topic := "arn:aws:sns:eu-west-1:123456789012:oncall"
	s := synth(t, map[string]any{
		"tenant":                       "beta-2",
		"distDir":                      fakeDist(t),
		"e2bSecretName":                "shared/e2b/api-key",
		"jwtIssuer":                    "https://auth.example.com/",
		"jwtAudience":                  "sessionbox",
		"jwtJwksUrl":                   "https://auth.example.com/.well-known/jwks.json",
		"allowedOrigins":               "https://app.example.com, http://localhost:5173",
		"removalPolicy":                "destroy",
		"acceptXApiKey":                "true",
		"tracing":                      "false",
		"bucketAccessLogs":             false,
		"wafWebAcl":                    "true",
		"deletionProtection":           true,
		"authorizerConcurrency":        "10",
		"streamConcurrency":            20.0,
		"reaperConcurrency":            "1",
		"throttleRate":                 "20",
		"throttleBurst":                40.0,
		"logRetentionDays":             "7",
		"alarmTopicArn":                topic,
		"apiGatewayCloudWatchRole":     false,
		"idleTimeoutSecs":              "600",
		"maxLiveSandboxes":             5.0,
		"maxLiveSandboxesPerPrincipal": "2",
		"allowInternetAccess":          false,
		"allowPrivateUrls":             "true",
		"template":                     "my-template",
		"e2bDomain":                    "e2b.example.com",
		"logLevel":                     "debug",
		"playground":                   "false",
	})
	runChecks(t, s, variant{
		retain: false, retentionDays: 7, rate: 20, burst: 40,
		origins:       []string{"https://app.example.com", "http://localhost:5173"},
		importedName:  "shared/e2b/api-key",
		acceptXAPIKey: true,
		guards:        true, authorizerConc: 10, streamConc: 20, reaperConc: 1,
		alarmTopic:    topic,
		noAccountRole: true,
		noPlayground:  true,
		sessionEnv: map[string]string{"SESSIONBOX_IDLE_TIMEOUT_SECS": "600", "SESSIONBOX_MAX_LIVE_SANDBOXES": "5",
			"SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL": "2",
			"SESSIONBOX_ALLOW_INTERNET_ACCESS":            "false", "SESSIONBOX_TEMPLATE": "my-template",
			"SESSIONBOX_ALLOW_PRIVATE_URLS": "true"},
		e2b:      map[string]string{"E2B_DOMAIN": "e2b.example.com"},
		logLevel: "DEBUG",
		jwt: map[string]string{
			"SESSIONBOX_JWT_ISSUER":   "https://auth.example.com/",
			"SESSIONBOX_JWT_AUDIENCE": "sessionbox",
			"SESSIONBOX_JWT_JWKS_URL": "https://auth.example.com/.well-known/jwks.json",
		},
	})
}

// TestBuildRefuses: no stack without a tenant or without function builds.
func TestBuildRefuses(t *testing.T) {
	emptyDist := t.TempDir()
	partial := fakeDist(t)
	if err := os.Remove(filepath.Join(partial, "reaper", "bootstrap")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		ctx     map[string]any
		wantErr string
	}{
		{"missing tenant", map[string]any{"distDir": fakeDist(t)}, "context tenant is required"},
		{"invalid tenant", map[string]any{"tenant": "Acme Corp", "distDir": fakeDist(t)}, "context tenant"},
		{"no builds", map[string]any{"tenant": "acme", "distDir": emptyDist}, "run `make build`"},
		{"one build missing", map[string]any{"tenant": "acme", "distDir": partial}, filepath.Join("reaper", "bootstrap")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stack, err := Build(newApp(t, c.ctx))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Build = %v, %v; want an error containing %q", stack, err, c.wantErr)
			}
		})
	}
}

// TestCDKJSON: cdk.json runs this module and sets the feature flags the
// tests synthesize with.
func TestCDKJSON(t *testing.T) {
	doc := cdkJSON(t)
	// The app runs from the repository root so the CLI's relative output
	// directory means the same to both.
	if app, _ := doc["app"].(string); !strings.HasPrefix(app, "go -C infra build ") {
		t.Errorf("cdk.json app = %q", app)
	}
	ctx, _ := doc["context"].(map[string]any)
	for _, flag := range []string{"@aws-cdk/aws-iam:minimizePolicies", "@aws-cdk/aws-apigateway:disableCloudWatchRole", "@aws-cdk/aws-lambda:useCdkManagedLogGroup"} {
		if ctx[flag] != true {
			t.Errorf("feature flag %s = %v", flag, ctx[flag])
		}
	}
	if _, ok := ctx["tenant"]; ok {
		t.Error("cdk.json must not default the tenant")
	}
}

// TestSingleOriginStack: with one allowed origin the gateway's own errors
// carry it too.
func TestSingleOriginStack(t *testing.T) {
	s := synth(t, map[string]any{"tenant": "solo", "distDir": fakeDist(t), "allowedOrigins": "https://app.example.com"})
	v := variant{retain: true, retentionDays: 30, rate: 50, burst: 100, origins: []string{"https://app.example.com"}}
	t.Run("gateway problems", func(t *testing.T) { checkGatewayResponses(t, s, v) })
	t.Run("routes", func(t *testing.T) { checkRoutes(t, s, v) })
	t.Run("bucket", func(t *testing.T) { checkBucket(t, s, v) })
}

// TestCLIPinned: the CDK CLI is one exact version in the manifest and the
// lockfile (npm's latest tag is another major).
func TestCLIPinned(t *testing.T) {
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	for file, v := range map[string]any{"package.json": &pkg, "package-lock.json": &lock} {
		raw, err := os.ReadFile(filepath.Join("_cdk", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	const want = "2.1148.1"
	if got := pkg.DevDependencies["aws-cdk"]; got != want {
		t.Errorf("package.json pins aws-cdk %q, want exactly %q", got, want)
	}
	if got := lock.Packages["node_modules/aws-cdk"].Version; got != want {
		t.Errorf("package-lock.json locks aws-cdk %q, want %q", got, want)
	}
}

// checkNag: cdk-nag's AwsSolutions and Serverless packs find nothing that
// is not suppressed, with its reason, beside the resource.
func checkNag(t *testing.T, s synthed, _ variant) {
	for _, f := range s.nag {
		t.Error(f)
	}
}
