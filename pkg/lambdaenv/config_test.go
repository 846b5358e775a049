package lambdaenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
)

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	full := map[string]string{
		"SESSIONBOX_TENANT": "acme", "SESSIONBOX_TABLE": "t", "SESSIONBOX_BUCKET": "b", "SESSIONBOX_EVENT_BUS": "bus",
		"SESSIONBOX_E2B_SECRET_ARN": "arn:secret", "SESSIONBOX_IDLE_TIMEOUT_SECS": "600", "SESSIONBOX_LIFETIME_SECS": "3600",
		"SESSIONBOX_MAX_LIVE_SANDBOXES": "5", "SESSIONBOX_ALLOWED_ORIGINS": "https://a.example, https://b.example",
		"AWS_LAMBDA_LOG_LEVEL": "warn",
	}
	c, err := lambdaenv.Load(getenv(full), lambdaenv.Execute.Needs)
	if err != nil {
		t.Fatal(err)
	}
	if c.Session.IdleTimeout != 10*time.Minute || c.Session.Lifetime != time.Hour || c.Session.MaxLiveSandboxesPerTenant != 5 ||
		c.StackID != "sessionbox-acme" || c.Session.StackID != "sessionbox-acme" || c.Session.Tenant != "acme" || c.LogLevel != slog.LevelWarn ||
		len(c.AllowedOrigins) != 2 || c.AllowedOrigins[1] != "https://b.example" || c.JWT != nil || !c.Session.AllowInternetAccess {
		t.Fatalf("config %+v", c)
	}

	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		needs lambdaenv.Needs
		want  []string // every part the error must name; nil means no error
	}{
		{"authorizer needs no E2B or bucket", map[string]string{"SESSIONBOX_TENANT": "acme", "SESSIONBOX_TABLE": "t"}, lambdaenv.Authorizer.Needs, nil},
		{"local key instead of secret", with("SESSIONBOX_E2B_SECRET_ARN", "", "E2B_API_KEY", "e2b_x"), lambdaenv.Execute.Needs, nil},
		{"nothing set", map[string]string{}, lambdaenv.Execute.Needs,
			[]string{"SESSIONBOX_TENANT", "SESSIONBOX_TABLE", "SESSIONBOX_BUCKET", "SESSIONBOX_EVENT_BUS", "SESSIONBOX_E2B_SECRET_ARN"}},
		{"bad tenant", with("SESSIONBOX_TENANT", "ac#me"), lambdaenv.Execute.Needs, []string{"SESSIONBOX_TENANT", "'#'"}},
		{"bad number", with("SESSIONBOX_IDLE_TIMEOUT_SECS", "ten"), lambdaenv.Execute.Needs, []string{"SESSIONBOX_IDLE_TIMEOUT_SECS", `"ten"`}},
		{"negative number", with("SESSIONBOX_REAP_BATCH", "-1"), lambdaenv.Reaper.Needs, []string{"SESSIONBOX_REAP_BATCH"}},
		{"half a JWT", with("SESSIONBOX_JWT_ISSUER", "https://issuer"), lambdaenv.Authorizer.Needs, []string{"SESSIONBOX_JWT_AUDIENCE"}},
		{"bad internet switch", with("SESSIONBOX_ALLOW_INTERNET_ACCESS", "yes"), lambdaenv.Execute.Needs, []string{"SESSIONBOX_ALLOW_INTERNET_ACCESS", `"yes"`}},
		{"bad log level", with("AWS_LAMBDA_LOG_LEVEL", "LOUD"), lambdaenv.Status.Needs, []string{"AWS_LAMBDA_LOG_LEVEL", "LOUD"}},
		{"bad bearer-only switch", with("SESSIONBOX_AUTH_BEARER_ONLY", "cached"), lambdaenv.Authorizer.Needs, []string{"SESSIONBOX_AUTH_BEARER_ONLY", `"cached"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lambdaenv.Load(getenv(tc.env), tc.needs)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not name %q", err, w)
				}
			}
		})
	}
	t.Run("internet off", func(t *testing.T) {
		c, err := lambdaenv.Load(getenv(with("SESSIONBOX_ALLOW_INTERNET_ACCESS", "false")), lambdaenv.Execute.Needs)
		if err != nil || c.Session.AllowInternetAccess {
			t.Fatalf("%+v %v", c.Session, err)
		}
	})
	t.Run("bearer only", func(t *testing.T) {
		c, err := lambdaenv.Load(getenv(with("SESSIONBOX_AUTH_BEARER_ONLY", "true")), lambdaenv.Authorizer.Needs)
		if err != nil || !c.BearerOnly {
			t.Fatalf("%+v %v", c, err)
		}
		if c, err := lambdaenv.Load(getenv(full), lambdaenv.Authorizer.Needs); err != nil || c.BearerOnly {
			t.Fatalf("unset: %+v %v", c, err)
		}
	})
	t.Run("JWT", func(t *testing.T) {
		c, err := lambdaenv.Load(getenv(with("SESSIONBOX_JWT_ISSUER", "https://i", "SESSIONBOX_JWT_AUDIENCE", "aud",
			"SESSIONBOX_JWT_JWKS_URL", "https://i/jwks")), lambdaenv.Authorizer.Needs)
		if err != nil || c.JWT == nil || c.JWT.Audience != "aud" {
			t.Fatalf("%+v %v", c.JWT, err)
		}
	})
}

func TestLoggerAddsRequestID(t *testing.T) {
	var buf bytes.Buffer
	log := lambdaenv.NewLogger(&buf, slog.LevelInfo).With("tenant", "acme")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	log.DebugContext(ctx, "hidden")
	log.InfoContext(ctx, "shown", "n", 1, "requestId", "api-1", "tenant", "acme", "n", 2)
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	lambdaenvtest.NoDuplicateKeys(t, buf.String())
	if first["awsRequestId"] != "req-1" || first["requestId"] != "api-1" || first["message"] != "shown" || first["tenant"] != "acme" ||
		first["level"] != "INFO" || first["n"] != 1.0 || first["timestamp"] == nil || second["awsRequestId"] != nil {
		t.Fatalf("records %v / %v", first, second)
	}
}

func TestWriteEMF(t *testing.T) {
	var buf bytes.Buffer
	at := time.UnixMilli(1795305600123)
	err := lambdaenv.WriteEMF(&buf, at, "sessionbox", map[string]string{"tenant": "acme"},
		[]lambdaenv.Metric{{Name: "Killed", Value: 3, Unit: "Count"}, {Name: "Errors", Value: 0, Unit: "Count"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Errors":0,"Killed":3,"_aws":{"CloudWatchMetrics":[{"Namespace":"sessionbox","Dimensions":[["tenant"]],` +
		`"Metrics":[{"Name":"Killed","Unit":"Count"},{"Name":"Errors","Unit":"Count"}]}],"Timestamp":1795305600123},` +
		`"level":"FATAL","tenant":"acme","timestamp":"2026-11-22T00:00:00.123Z"}` + "\n"
	if buf.String() != want {
		t.Fatalf("got  %s\nwant %s", buf.String(), want)
	}
	if err := lambdaenv.WriteEMF(&buf, at, "sessionbox", map[string]string{"Killed": "x"},
		[]lambdaenv.Metric{{Name: "Killed", Value: 1}}); err == nil {
		t.Fatal("a metric named like a dimension was accepted")
	}
	if err := lambdaenv.WriteEMF(&buf, at, "sessionbox", map[string]string{"level": "x"},
		[]lambdaenv.Metric{{Name: "Killed", Value: 1}}); err == nil {
		t.Fatal("a dimension named like the level field was accepted")
	}
}

// TestEMFSurvivesEveryLogLevel holds metric lines to Lambda's log-level
// filtering (lambdaemu.LineLevel): at any application log level, FATAL
// included, the line is kept, or alarms on the metrics go silent.
func TestEMFSurvivesEveryLogLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := lambdaenv.WriteEMF(&buf, time.Now(), "sessionbox", map[string]string{"tenant": "acme"},
		[]lambdaenv.Metric{{Name: "Killed", Value: 1, Unit: "Count"}}); err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"} {
		var out bytes.Buffer
		f := lambdaemu.LogFilter(&out, level)
		if _, err := f.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		if out.Len() == 0 {
			t.Errorf("at %s Lambda would drop the metric line (its level: %s): %s", level, lambdaemu.LineLevel(buf.Bytes()), buf.Bytes())
		}
	}
}
