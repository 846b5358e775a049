package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ctxOf(m map[string]any) func(string) any {
	return func(k string) any { return m[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := ConfigFromContext(ctxOf(map[string]any{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Tenant: "acme", RetainData: true, LogRetentionDays: 30, ThrottleRate: 50, ThrottleBurst: 100,
		APIGatewayCloudWatchRole: true, StageName: "prod", LogLevel: "INFO", SessionEnv: map[string]string{},
		Playground: true, Tracing: true, BucketAccessLogs: true,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", c, want)
	}
}

// TestConfigValues: context arrives as strings from the CLI and as JSON
// types from cdk.json; both read the same.
func TestConfigValues(t *testing.T) {
	cases := []struct {
		name  string
		ctx   map[string]any
		check func(Config) bool
	}{
		{"origins trimmed and deduplicated", map[string]any{"allowedOrigins": " https://a.example.com,https://a.example.com, http://localhost:3000 ,"},
			func(c Config) bool {
				return reflect.DeepEqual(c.AllowedOrigins, []string{"https://a.example.com", "http://localhost:3000"})
			}},
		{"destroy", map[string]any{"removalPolicy": "DESTROY"}, func(c Config) bool { return !c.RetainData }},
		{"retain spelled out", map[string]any{"removalPolicy": "retain"}, func(c Config) bool { return c.RetainData }},
		{"numbers as strings", map[string]any{"throttleRate": "12.5", "throttleBurst": "30", "logRetentionDays": "90"},
			func(c Config) bool {
				return c.ThrottleRate == 12.5 && c.ThrottleBurst == 30 && c.LogRetentionDays == 90
			}},
		{"numbers as JSON", map[string]any{"throttleRate": 7.0, "throttleBurst": 9.0, "logRetentionDays": 365.0},
			func(c Config) bool { return c.ThrottleRate == 7 && c.ThrottleBurst == 9 && c.LogRetentionDays == 365 }},
		{"booleans as strings", map[string]any{"acceptXApiKey": "true", "apiGatewayCloudWatchRole": "false"},
			func(c Config) bool { return c.AcceptXAPIKey && !c.APIGatewayCloudWatchRole }},
		{"booleans as JSON", map[string]any{"acceptXApiKey": true, "apiGatewayCloudWatchRole": false},
			func(c Config) bool { return c.AcceptXAPIKey && !c.APIGatewayCloudWatchRole }},
		{"guards", map[string]any{"tracing": "false", "bucketAccessLogs": false, "wafWebAcl": "true", "deletionProtection": true},
			func(c Config) bool { return !c.Tracing && !c.BucketAccessLogs && c.WAF && c.DeletionProtection }},
		{"reservations", map[string]any{"authorizerConcurrency": "10", "streamConcurrency": 20.0, "reaperConcurrency": "1"},
			func(c Config) bool {
				return c.AuthorizerConcurrency == 10 && c.StreamConcurrency == 20 && c.ReaperConcurrency == 1
			}},
		{"no reservation spelled 0", map[string]any{"reaperConcurrency": "0", "streamConcurrency": 0.0},
			func(c Config) bool { return c.ReaperConcurrency == 0 && c.StreamConcurrency == 0 }},
		{"playground by default", map[string]any{}, func(c Config) bool { return c.Playground }},
		{"playground off", map[string]any{"playground": "false"}, func(c Config) bool { return !c.Playground }},
		{"playground off as JSON", map[string]any{"playground": false}, func(c Config) bool { return !c.Playground }},
		{"jwt", map[string]any{"jwtIssuer": "https://idp.example.com", "jwtAudience": "api", "jwtJwksUrl": "https://idp.example.com/jwks"},
			func(c Config) bool {
				return c.JWTIssuer == "https://idp.example.com" && c.JWTAudience == "api" && c.JWTJWKSURL == "https://idp.example.com/jwks"
			}},
		{"imported secret", map[string]any{"e2bSecretName": "team/e2b"}, func(c Config) bool { return c.E2BSecretName == "team/e2b" }},
		{"stage", map[string]any{"stageName": "v1_live"}, func(c Config) bool { return c.StageName == "v1_live" }},
		{"dist dir", map[string]any{"distDir": "/opt/build"}, func(c Config) bool { return c.DistDir == "/opt/build" }},
		{"session knobs as strings", map[string]any{"template": "my-tpl", "idleTimeoutSecs": "600", "lifetimeSecs": "3600",
			"execTimeoutSecs": "120", "maxLiveSandboxes": "5", "maxLiveSandboxesPerPrincipal": "2", "reapBatch": "50", "maxOutputBytes": "4096",
			"maxResultBytes": "65536", "allowInternetAccess": "false"},
			func(c Config) bool {
				return reflect.DeepEqual(c.SessionEnv, map[string]string{"SESSIONBOX_TEMPLATE": "my-tpl",
					"SESSIONBOX_IDLE_TIMEOUT_SECS": "600", "SESSIONBOX_LIFETIME_SECS": "3600", "SESSIONBOX_EXEC_TIMEOUT_SECS": "120",
					"SESSIONBOX_MAX_LIVE_SANDBOXES": "5", "SESSIONBOX_MAX_LIVE_SANDBOXES_PER_PRINCIPAL": "2", "SESSIONBOX_REAP_BATCH": "50", "SESSIONBOX_MAX_OUTPUT_BYTES": "4096",
					"SESSIONBOX_MAX_RESULT_BYTES": "65536", "SESSIONBOX_ALLOW_INTERNET_ACCESS": "false"})
			}},
		{"session knobs as JSON", map[string]any{"idleTimeoutSecs": 900.0, "allowInternetAccess": true, "allowPrivateUrls": true},
			func(c Config) bool {
				return reflect.DeepEqual(c.SessionEnv, map[string]string{"SESSIONBOX_IDLE_TIMEOUT_SECS": "900",
					"SESSIONBOX_ALLOW_INTERNET_ACCESS": "true", "SESSIONBOX_ALLOW_PRIVATE_URLS": "true"})
			}},
		{"self-hosted E2B and log level", map[string]any{"e2bDomain": "e2b.example.com", "e2bApiUrl": "https://api.e2b.example.com", "logLevel": "debug"},
			func(c Config) bool {
				return c.E2BDomain == "e2b.example.com" && c.E2BAPIURL == "https://api.e2b.example.com" && c.LogLevel == "DEBUG"
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ctx["tenant"] = "acme"
			cfg, err := ConfigFromContext(ctxOf(c.ctx))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(cfg) {
				t.Errorf("%+v", cfg)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	cases := []struct {
		name    string
		ctx     map[string]any
		wantErr string
	}{
		{"no tenant", map[string]any{}, "tenant is required"},
		{"blank tenant", map[string]any{"tenant": "  "}, "tenant is required"},
		{"upper case tenant", map[string]any{"tenant": "Acme"}, "context tenant"},
		{"tenant with space", map[string]any{"tenant": "ac me"}, "context tenant"},
		{"tenant starting with digit", map[string]any{"tenant": "1acme"}, "context tenant"},
		{"tenant ending with hyphen", map[string]any{"tenant": "acme-"}, "context tenant"},
		{"tenant with double hyphen", map[string]any{"tenant": "ac--me"}, "context tenant"},
		{"one-letter tenant", map[string]any{"tenant": "a"}, "context tenant"},
		{"long tenant", map[string]any{"tenant": strings.Repeat("a", 25)}, "context tenant"},
		{"wildcard origin", map[string]any{"allowedOrigins": "*"}, "allowedOrigins"},
		{"origin with path", map[string]any{"allowedOrigins": "https://a.example.com/app"}, "allowedOrigins"},
		{"plain http origin", map[string]any{"allowedOrigins": "http://a.example.com"}, "https"},
		{"bad secret name", map[string]any{"e2bSecretName": "has space"}, "e2bSecretName"},
		{"secret name like an ARN suffix", map[string]any{"e2bSecretName": "e2b-AbC123"}, "ambiguous"},
		{"issuer without jwks", map[string]any{"jwtIssuer": "https://idp.example.com", "jwtAudience": "api"}, "go together"},
		{"jwt without audience", map[string]any{"jwtIssuer": "https://i", "jwtJwksUrl": "https://i/jwks"}, "go together"},
		{"audience alone", map[string]any{"jwtAudience": "x"}, "go together"},
		{"http jwks", map[string]any{"jwtIssuer": "https://i", "jwtAudience": "api", "jwtJwksUrl": "http://i/jwks"}, "https"},
		{"unknown removal policy", map[string]any{"removalPolicy": "snapshot"}, "removalPolicy"},
		{"fractional reservation", map[string]any{"reaperConcurrency": "1.5"}, "reaperConcurrency"},
		{"negative reservation", map[string]any{"authorizerConcurrency": -1.0}, "authorizerConcurrency"},
		{"huge reservation", map[string]any{"streamConcurrency": "5000"}, "streamConcurrency"},
		{"tracing not a boolean", map[string]any{"tracing": "yes please"}, "tracing"},
		{"retention not offered", map[string]any{"logRetentionDays": "10"}, "logRetentionDays"},
		{"fractional retention", map[string]any{"logRetentionDays": 30.5}, "logRetentionDays"},
		{"zero rate", map[string]any{"throttleRate": "0"}, "throttleRate"},
		{"negative burst", map[string]any{"throttleBurst": -1.0}, "throttleBurst"},
		{"fractional burst", map[string]any{"throttleBurst": "1.5"}, "throttleBurst"},
		{"rate not a number", map[string]any{"throttleRate": "fast"}, "throttleRate"},
		{"bool not a bool", map[string]any{"acceptXApiKey": "sometimes"}, "acceptXApiKey"},
		{"bool of wrong type", map[string]any{"acceptXApiKey": 1.0}, "acceptXApiKey"},
		{"playground not a bool", map[string]any{"playground": "maybe"}, "playground"},
		{"topic not an ARN", map[string]any{"alarmTopicArn": "oncall"}, "alarmTopicArn"},
		{"bad stage", map[string]any{"stageName": "prod-1"}, "stageName"},
		{"seconds in words", map[string]any{"idleTimeoutSecs": "ten"}, `context idleTimeoutSecs: "ten"`},
		{"zero seconds", map[string]any{"execTimeoutSecs": "0"}, "execTimeoutSecs"},
		{"fractional count", map[string]any{"maxLiveSandboxes": 2.5}, "maxLiveSandboxes"},
		{"negative bytes", map[string]any{"maxOutputBytes": "-1"}, "maxOutputBytes"},
		{"internet not a bool", map[string]any{"allowInternetAccess": "yes please"}, "allowInternetAccess"},
		{"private URLs not a bool", map[string]any{"allowPrivateUrls": "sometimes"}, "allowPrivateUrls"},
		{"template with a space", map[string]any{"template": "my template"}, "template"},
		{"domain with a scheme", map[string]any{"e2bDomain": "https://e2b.example.com"}, "e2bDomain"},
		{"http E2B API", map[string]any{"e2bApiUrl": "http://api.e2b.example.com"}, "e2bApiUrl"},
		{"unknown log level", map[string]any{"logLevel": "LOUD"}, "logLevel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := c.ctx["tenant"]; !ok && c.name != "no tenant" {
				c.ctx["tenant"] = "acme"
			}
			_, err := ConfigFromContext(ctxOf(c.ctx))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// TestResolveDistDir: relative paths are from the repository root (where
// cdk.json is), whichever directory the app runs in.
func TestResolveDistDir(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"":           filepath.Join(root, "dist"),
		"build/dist": filepath.Join(root, "build", "dist"),
		"/opt/dist":  "/opt/dist",
	}
	for in, want := range cases {
		got, err := resolveDistDir(in)
		if err != nil || got != want {
			t.Errorf("resolveDistDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
