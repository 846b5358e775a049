package sessionenv

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/apigw"
	"github.com/sessionbox/sessionbox/pkg/playground"
)

// API is the HTTP API with the caller's identity taken from the
// authorizer's context; extra options follow the environment's (the mcp
// function adds api.WithMCP).
func (e *Env) API(extra ...api.Option) http.Handler {
	opts := []api.Option{api.WithLogger(e.Log), api.WithIdentity(authorizerIdentity(e.Config.Tenant))}
	// Each principal's rate is counted in the table, shared by every
	// instance of every function: one conditional write per request.
	if e.Store != nil {
		opts = append(opts, api.WithRateLimiter(e.Store.NewRateLimiter(e.Config.Session.RequestRate)))
	}
	if len(e.Config.AllowedOrigins) > 0 {
		opts = append(opts, api.WithAllowedOrigins(e.Config.AllowedOrigins...))
	}
	return api.New(e.Manager, append(opts, extra...)...)
}

// BufferedAPI is the handler of a buffered REST API proxy integration.
func (e *Env) BufferedAPI() apigw.BufferedHandler { return apigw.Buffered(e.API()) }

// StatusAPI is BufferedAPI with the playground page (pkg/playground) in
// front: the status function serves both, the page at "/" without the
// authorizer. The page's uploads go to presigned S3 URLs, so its CSP lets it
// reach S3's hosts, or the endpoint the functions are pointed at in tests.
func (e *Env) StatusAPI() apigw.BufferedHandler {
	page := playground.Options{
		ConnectSources: []string{playground.UploadOrigin(aws.ToString(e.Endpoint("S3")))},
		ClientPath:     func(r *http.Request) string { return apigw.ClientPath(r.Context()) },
	}
	return apigw.Buffered(playground.With(e.API(), page))
}

// StreamingAPI is the handler of a STREAM-mode integration: it always
// answers in the streaming format; the API picks NDJSON or JSON from Accept.
func (e *Env) StreamingAPI(extra ...api.Option) apigw.StreamingHandler {
	return apigw.Streaming(e.API(extra...))
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
