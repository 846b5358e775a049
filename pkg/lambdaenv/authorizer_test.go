package lambdaenv_test

import (
	"errors"
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
	s := newStack(t)
	now := time.Now()
	if err := s.store.PutAPIKey(lambdaCtx(t, "seed"), &session.APIKey{Hash: session.HashAPIKey(replayKey),
		Prefix: replayKey[:8], Tenant: tenant, Principal: "alice", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	base, err := lambdaenv.InitBase(lambdaenv.Authorizer, lambdaenv.WithLogOutput(&syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if s.secrets.count() != 0 {
		t.Fatal("the authorizer read the E2B key")
	}
	a, err := base.Authorizer()
	if err != nil {
		t.Fatal(err)
	}
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
		file  string
		check func(*testing.T, events.APIGatewayCustomAuthorizerResponse, error)
	}{
		{"authorizer/bearer-key.json", allow},
		{"authorizer/x-api-key.json", allow},
		{"authorizer/unknown-key.json", deny},
		{"authorizer/no-credential.json", deny},
	} {
		t.Run(c.file, func(t *testing.T) {
			ev := loadEvent[events.APIGatewayCustomAuthorizerRequestTypeRequest](t, c.file)
			res, err := a.Handle(lambdaCtx(t, "auth"), ev)
			c.check(t, res, err)
		})
	}
	t.Run("revoked", func(t *testing.T) {
		if err := s.store.RevokeAPIKey(lambdaCtx(t, "revoke"), session.HashAPIKey(replayKey), time.Now()); err != nil {
			t.Fatal(err)
		}
		ev := loadEvent[events.APIGatewayCustomAuthorizerRequestTypeRequest](t, "authorizer/bearer-key.json")
		res, err := a.Handle(lambdaCtx(t, "auth"), ev)
		deny(t, res, err)
	})
}
