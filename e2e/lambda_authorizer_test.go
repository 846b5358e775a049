package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// replayKey is the key the authorizer samples carry (events/README.md).
const replayKey = "sbx_replaywithseededkey"

// TestReplayAuthorizerEvents seeds the samples' key, then replays every
// authorizer sample through the authorizer function.
func TestReplayAuthorizerEvents(t *testing.T) {
	s := newLambdaStack(t)
	now := time.Now()
	if err := s.store.PutAPIKey(lambdaCtx(t, "seed"), &session.APIKey{Hash: session.HashAPIKey(replayKey),
		Prefix: replayKey[:8], Tenant: tenant, Principal: "alice", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	base, err := lambdaenv.InitBase(lambdaenv.Authorizer, lambdaenv.WithLogOutput(logs))
	if err != nil {
		t.Fatal(err)
	}
	if s.secrets.Count() != 0 {
		t.Fatal("the authorizer read the E2B key")
	}
	az, err := base.Authorizer()
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	a := base.AuthorizerHandler(az, &metrics)
	allow := func(t *testing.T, res events.APIGatewayCustomAuthorizerResponse, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		st := res.PolicyDocument.Statement
		if res.PrincipalID != "alice" || len(st) != 1 || st[0].Effect != "Allow" ||
			st[0].Resource[0] != "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*" ||
			res.Context["tenant"] != tenant || res.Context["principal"] != "alice" {
			t.Fatalf("answer %+v", res)
		}
	}
	deny := func(t *testing.T, _ events.APIGatewayCustomAuthorizerResponse, err error) {
		t.Helper()
		if !errors.Is(err, authorizer.ErrUnauthorized) || err.Error() != "Unauthorized" {
			t.Fatalf("got %v, want exactly Unauthorized (API Gateway's 401)", err)
		}
	}
	for _, c := range []struct {
		file   string
		check  func(*testing.T, events.APIGatewayCustomAuthorizerResponse, error)
		metric string
	}{
		{"authorizer/bearer-key.json", allow, lambdaenv.MetricAuthAllowed},
		{"authorizer/x-api-key.json", allow, lambdaenv.MetricAuthAllowed},
		{"authorizer/unknown-key.json", deny, lambdaenv.MetricAuthRefusals},
		{"authorizer/no-credential.json", deny, lambdaenv.MetricAuthRefusals},
	} {
		t.Run(c.file, func(t *testing.T) {
			ev := loadEvent[events.APIGatewayCustomAuthorizerRequestTypeRequest](t, c.file)
			metrics.Reset()
			res, err := a.Handle(lambdaCtx(t, "auth"), ev)
			c.check(t, res, err)
			authCounted(t, metrics.Bytes(), c.metric)
		})
	}
	t.Run("refusals logged with their reason", func(t *testing.T) {
		var refused int
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"message":"request refused"`) {
				refused++
				if !strings.Contains(line, `"reason":`) {
					t.Errorf("refusal without a reason: %s", line)
				}
			}
		}
		if refused != 2 {
			t.Fatalf("%d refusals logged, want 2:\n%s", refused, logs)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		if err := s.store.RevokeAPIKey(lambdaCtx(t, "revoke"), session.HashAPIKey(replayKey), time.Now()); err != nil {
			t.Fatal(err)
		}
		ev := loadEvent[events.APIGatewayCustomAuthorizerRequestTypeRequest](t, "authorizer/bearer-key.json")
		res, err := a.Handle(lambdaCtx(t, "auth"), ev)
		deny(t, res, err)
	})
}

// authCounted checks the one EMF line of an authorizer invocation: want is
// 1, the other outcomes 0.
func authCounted(t *testing.T, line []byte, want string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("metrics %q: %v", line, err)
	}
	aws, _ := m["_aws"].(map[string]any)
	if aws == nil || m["tenant"] != tenant {
		t.Fatalf("not an EMF line of the tenant: %s", line)
	}
	for _, n := range []string{lambdaenv.MetricAuthAllowed, lambdaenv.MetricAuthRefusals, lambdaenv.MetricAuthFailures} {
		v := 0.0
		if n == want {
			v = 1
		}
		if m[n] != v {
			t.Fatalf("%s = %v, want %v: %s", n, m[n], v, line)
		}
	}
}

// TestAuthorizerCountsFailures: with the store unreachable the authorizer
// fails with something other than Unauthorized (API Gateway answers 500,
// uncached) and counts a failure, the metric the stack alarms on.
func TestAuthorizerCountsFailures(t *testing.T) {
	s := newLambdaStack(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", s.secrets.URL) // answers nothing DynamoDB understands
	base, err := lambdaenv.InitBase(lambdaenv.Authorizer, lambdaenv.WithLogOutput(&syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	az, err := base.Authorizer()
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	_, err = base.AuthorizerHandler(az, &metrics).Handle(lambdaCtx(t, "auth"),
		loadEvent[events.APIGatewayCustomAuthorizerRequestTypeRequest](t, "authorizer/bearer-key.json"))
	if err == nil || errors.Is(err, authorizer.ErrUnauthorized) {
		t.Fatalf("got %v, want a failure that is not a refusal", err)
	}
	authCounted(t, metrics.Bytes(), lambdaenv.MetricAuthFailures)
}
