package lambdaenv

import (
	"fmt"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/apigw"
	"github.com/sessionbox/sessionbox/pkg/authorizer"
)

// Function is one Lambda function: its name (functions/<name>, dist/<name>)
// and what it talks to.
type Function struct {
	Name  string
	Needs Needs
}

// The functions. Every API function serves the whole router; API Gateway
// decides which routes reach which function, and each function's IAM role
// allows only what its Needs cover.
var (
	Start      = Function{"start", NeedStore | NeedSandboxes}
	Stop       = Function{"stop", NeedStore | NeedSandboxes}
	Status     = Function{"status", NeedStore | NeedSandboxes}
	Execute    = Function{"execute", NeedStore | NeedSandboxes | NeedBlobs | NeedBus}
	Files      = Function{"files", NeedStore | NeedSandboxes | NeedBlobs}
	Install    = Function{"install", NeedStore | NeedSandboxes}
	Runs       = Function{"runs", NeedStore | NeedSandboxes | NeedBlobs | NeedBus}
	Reaper     = Function{"reaper", NeedStore | NeedSandboxes}
	Authorizer = Function{"authorizer", NeedStore}
)

// Functions lists every function, in the Makefile's order.
func Functions() []Function {
	return []Function{Start, Stop, Status, Execute, Files, Install, Runs, Reaper, Authorizer}
}

// API is the HTTP API with the caller's identity taken from the
// authorizer's context.
func (e *Env) API() http.Handler {
	opts := []api.Option{api.WithLogger(e.Log), api.WithIdentity(authorizerIdentity(e.Config.Tenant))}
	if len(e.Config.AllowedOrigins) > 0 {
		opts = append(opts, api.WithAllowedOrigins(e.Config.AllowedOrigins...))
	}
	return api.New(e.Manager, opts...)
}

// BufferedAPI is the handler of a buffered REST API proxy integration.
func (e *Env) BufferedAPI() apigw.BufferedHandler { return apigw.Buffered(e.API()) }

// StreamingAPI is the handler of a STREAM-mode integration: it always
// answers in the streaming format; the API picks NDJSON or JSON from Accept.
func (e *Env) StreamingAPI() apigw.StreamingHandler { return apigw.Streaming(e.API()) }

// Authorizer is the REQUEST authorizer over the store's API keys.
func (e *Env) Authorizer() (*authorizer.Authorizer, error) {
	a, err := authorizer.New(e.Store, authorizer.Config{Tenant: e.Config.Tenant, JWT: e.Config.JWT, Logger: e.Log})
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	return a, nil
}

// authorizerIdentity reads tenant and principal from what the authorizer
// returned. A context for another tenant is refused: the authorizer checks
// it already, this keeps a misrouted request out all the same.
func authorizerIdentity(tenant string) api.IdentityFunc {
	return func(r *http.Request) (string, string, bool) {
		m := apigw.Authorizer(r.Context())
		t, _ := m["tenant"].(string)
		p, _ := m["principal"].(string)
		return t, p, t == tenant && p != ""
	}
}
