package lambdaenv_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

// TestInitFailsClearly: a missing secret or missing credentials stop init
// with a message that says what to fix.
func TestInitFailsClearly(t *testing.T) {
	sm := lambdaenvtest.NewSecretsManager(t, map[string]string{"arn:empty": "  ", "arn:json": `{"apiKey":"e2b_0123456789abcdef"}`, "arn:placeholder": "Xk3-placeholder"})
	cfg := lambdaenv.Config{Tenant: "acme", Table: "t", E2BSecretARN: "arn:missing", E2BAPIURL: "http://127.0.0.1:9"}
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOCAL")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local-secret")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", sm.URL)
	ctx := context.Background()
	needs := lambdaenv.NeedStore | lambdaenv.NeedSandboxes
	for arn, want := range map[string]string{"arn:missing": "no secret arn:missing", "arn:empty": "is empty",
		"arn:placeholder": "arn:placeholder does not hold an E2B API key"} {
		cfg.E2BSecretARN = arn
		if _, err := sessionenv.New(ctx, cfg, needs, lambdaenv.WithLogOutput(&bytes.Buffer{})); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v", arn, err)
		}
	}
	cfg.E2BSecretARN = "arn:json"
	env, err := sessionenv.New(ctx, cfg, needs, lambdaenv.WithLogOutput(&bytes.Buffer{}))
	if err != nil || env.Manager == nil {
		t.Fatalf("JSON secret: %v", err)
	}
	_ = env.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	if _, err := sessionenv.New(ctx, cfg, needs); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("no credentials: %v", err)
	}
}
