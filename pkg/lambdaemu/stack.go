package lambdaemu

// What the synthesized stack (infra/) configures on API Gateway, for the
// emulated gateway to apply. infra is its own Go module and cannot import
// this one; TestStackMatchesInfra holds these values to infra/api.go and
// infra/functions.go, so the tests' gateway and the real one cannot drift.

import (
	"slices"
	"time"
)

// StackBinaryMediaTypes is the REST API's binaryMediaTypes. "*/*" makes
// every isBase64Encoded response go out as bytes whatever the client's
// Accept (fetch's and curl's "*/*", none, a browser's list), and every
// request body reach the function base64-encoded, whatever its type.
var StackBinaryMediaTypes = []string{"*/*"}

// StackStreamedFunctions are the functions integrated with response
// transfer mode STREAM; every other API function is buffered.
var StackStreamedFunctions = []string{"start", "stop", "execute", "install", "fetch", "mcp"}

// StackRoute is one method of the REST API and the function behind it.
type StackRoute struct {
	Function string
	Method   string
	// Path is the resource path, with {name} for a path parameter.
	Path string
	// Public routes have no authorizer.
	Public bool
}

// StackRoutes are the REST API's methods (infra/api.go's routes and
// playgroundRoutes).
func StackRoutes() []StackRoute {
	const s = "/v1/sessions/{id}"
	r := func(fn, method, path string) StackRoute { return StackRoute{Function: fn, Method: method, Path: path} }
	pub := func(fn, method, path string) StackRoute {
		return StackRoute{Function: fn, Method: method, Path: path, Public: true}
	}
	return []StackRoute{
		r("start", "POST", s+"/sandbox/start"),
		r("stop", "POST", s+"/sandbox/stop"),
		r("stop", "POST", s+"/checkpoint"),
		r("stop", "DELETE", s),
		r("status", "GET", s+"/sandbox"),
		r("status", "GET", s+"/sandbox/metrics"),
		r("status", "GET", "/v1/sessions"),
		r("status", "GET", "/v1/runs/{runId}"),
		pub("status", "GET", "/healthz"),
		pub("status", "GET", "/v1/openapi.json"),
		r("execute", "POST", s+"/execute"),
		r("execute", "POST", s+"/execute/stream"),
		r("execute", "POST", s+"/reset"),
		r("execute", "POST", s+"/runs"),
		r("execute", "POST", "/v1/execute"),
		r("execute", "POST", s+"/contexts"),
		r("execute", "GET", s+"/contexts"),
		r("execute", "DELETE", s+"/contexts/{contextId}"),
		r("execute", "POST", s+"/contexts/{contextId}/reset"),
		r("execute", "POST", s+"/commands"),
		r("execute", "GET", s+"/commands"),
		r("execute", "GET", s+"/commands/{commandId}"),
		r("execute", "GET", s+"/commands/{commandId}/output"),
		r("execute", "POST", s+"/commands/{commandId}/kill"),
		r("execute", "POST", "/v1/execute/stream"),
		r("install", "POST", s+"/install"),
		r("install", "POST", s+"/install/stream"),
		r("files", "GET", s+"/files"),
		r("files", "DELETE", s+"/files"),
		r("files", "GET", s+"/files/content"),
		r("files", "PUT", s+"/files/content"),
		r("files", "POST", s+"/files/upload-url"),
		r("files", "POST", s+"/files/import"),
		r("files", "POST", s+"/files/download-url"),
		r("fetch", "POST", s+"/files/upload-urls"),
		r("mcp", "POST", "/v1/mcp"),
		pub("status", "GET", "/"),
		pub("status", "GET", "/playground/{file}"),
	}
}

// StackAuthorizerCacheTTL is the REQUEST authorizer's results cache TTL
// (infra/api.go's authCacheMinutes) when the stack accepts bearer keys
// only, its default.
const StackAuthorizerCacheTTL = 5 * time.Minute

// StackAuthorizerIdentitySources are the authorizer's identity sources with
// the cache on: the cache key is the Authorization header alone.
var StackAuthorizerIdentitySources = []string{"Authorization"}

// StackAuthorizerEnv is what the stack adds to the authorizer function's
// environment with the cache on: the credential must come from the cache
// key's header alone, else one caller's X-API-Key answer would be cached
// under whatever Authorization value came with it (pkg/authorizer).
var StackAuthorizerEnv = map[string]string{"SESSIONBOX_AUTH_BEARER_ONLY": "true"}

// StackAuthorizerCache is the authorizer cache the stack configures.
func StackAuthorizerCache() AuthorizerCache {
	return AuthorizerCache{TTL: StackAuthorizerCacheTTL, IdentitySources: slices.Clone(StackAuthorizerIdentitySources)}
}
