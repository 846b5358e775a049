// Package authorizer is sessionbox's API Gateway Lambda REQUEST authorizer:
// it turns an API key (or, when configured, a JWT) into an Allow policy
// whose context carries the tenant and principal the API functions serve.
package authorizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/credential"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// ErrUnauthorized is the error API Gateway turns into a 401 answer: a
// Lambda authorizer reports a missing or bad credential by failing with
// exactly this message.
var ErrUnauthorized = errors.New("Unauthorized")

// Keys looks up stored API keys by hash; session.Store satisfies it.
type Keys = session.APIKeyGetter

// Config is the authorizer's configuration.
type Config struct {
	// Tenant is the stack's tenant: keys of any other tenant are refused.
	Tenant string
	// JWT, when set, also accepts bearer JWTs; the principal is the
	// token's subject.
	JWT *JWTConfig
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// BearerOnly reads the credential from Authorization: Bearer alone,
	// never X-API-Key. It must be set whenever API Gateway caches the
	// authorizer's answers keyed on Authorization (the stack's default):
	// otherwise a request with "Authorization: Basic x" and a valid
	// X-API-Key would leave that key's identity cached under "Basic x" for
	// anyone who sends the same header.
	BearerOnly bool
}

// Authorizer answers API Gateway's authorization requests.
type Authorizer struct {
	keys   Keys
	tenant string
	jwt    *jwtVerifier
	log    *slog.Logger
	// bearerOnly: see Config.BearerOnly.
	bearerOnly bool
}

// New builds an Authorizer. JWKS keys are fetched lazily, on the first JWT.
func New(keys Keys, cfg Config) (*Authorizer, error) {
	if cfg.Tenant == "" {
		return nil, errors.New("authorizer: tenant is required")
	}
	a := &Authorizer{keys: keys, tenant: cfg.Tenant, log: cfg.Logger, bearerOnly: cfg.BearerOnly}
	if a.log == nil {
		a.log = slog.Default()
	}
	if cfg.JWT != nil {
		v, err := newJWTVerifier(*cfg.JWT)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	return a, nil
}

// JWTPrincipalPrefix starts the principal of every JWT-authenticated caller.
const JWTPrincipalPrefix = "jwt:"

// Identity is who a request acts for.
type Identity struct {
	Tenant    string
	Principal string
	// Method is "apiKey" or "jwt".
	Method string
}

// Handle is the Lambda handler: an Allow policy for the whole API stage on
// success (so API Gateway's cache serves every route for that credential),
// ErrUnauthorized otherwise.
func (a *Authorizer) Handle(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	id, err := a.Authenticate(ctx, ev.Headers)
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			// API Gateway hears only "Unauthorized"; the reason is for
			// whoever reads the logs (it names a key by its prefix only).
			a.log.InfoContext(ctx, "request refused", "reason", err.Error(), "methodArn", ev.MethodArn)
			return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
		}
		// Anything else (the store down) must not read as "bad key": API
		// Gateway answers 500 and does not cache it.
		return events.APIGatewayCustomAuthorizerResponse{}, err
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: id.Principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{
			Version: "2012-10-17",
			Statement: []events.IAMPolicyStatement{{
				Action:   []string{"execute-api:Invoke"},
				Effect:   "Allow",
				Resource: []string{stageARN(ev.MethodArn)},
			}},
		},
		Context: map[string]any{"tenant": id.Tenant, "principal": id.Principal, "authMethod": id.Method},
	}, nil
}

// Authenticate resolves the credential in the request headers, taken by
// the precedence of pkg/credential and checked by session.VerifyAPIKey, as
// the API served locally does.
func (a *Authorizer) Authenticate(ctx context.Context, headers map[string]string) (Identity, error) {
	extract := credential.FromMap
	if a.bearerOnly {
		extract = credential.BearerFromMap
	}
	token, err := extract(headers)
	if err != nil {
		return Identity{}, fmt.Errorf("%v: %w", err, ErrUnauthorized)
	}
	if a.jwt != nil && looksLikeJWT(token) {
		sub, err := a.jwt.verify(ctx, token)
		switch {
		case errors.Is(err, errKeysUnavailable):
			return Identity{}, err
		case err != nil:
			a.log.InfoContext(ctx, "jwt refused", "error", err)
			return Identity{}, fmt.Errorf("jwt: %w", ErrUnauthorized)
		}
		// Token subjects live apart from API-key principals: a token whose
		// subject is "alice" must not see the sessions of the key "alice".
		return Identity{Tenant: a.tenant, Principal: JWTPrincipalPrefix + sub, Method: "jwt"}, nil
	}
	key, err := session.VerifyAPIKey(ctx, a.keys, a.tenant, token)
	switch {
	case errors.Is(err, session.ErrUnauthorized):
		return Identity{}, fmt.Errorf("%v: %w", err, ErrUnauthorized)
	case err != nil:
		return Identity{}, err
	}
	return Identity{Tenant: key.Tenant, Principal: key.Principal, Method: "apiKey"}, nil
}

func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// stageARN widens a method ARN
// (arn:aws:execute-api:region:account:api/stage/VERB/path) to every method
// of the stage, so one cached answer serves every route.
func stageARN(methodARN string) string {
	parts := strings.SplitN(methodARN, "/", 3)
	if len(parts) < 2 {
		return methodARN
	}
	return parts[0] + "/" + parts[1] + "/*/*"
}
