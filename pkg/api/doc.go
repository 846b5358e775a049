// Package api is sessionbox's HTTP API (docs/architecture.md, "The API")
// on net/http: the routes over a session Manager, request validation,
// application/problem+json errors, API-key or injected identities, CORS,
// request ids and access logs, JSON or live NDJSON for execute and install,
// and the OpenAPI 3.1 document served at /v1/openapi.json.
//
// The same handler serves local mode (`sessionbox serve`) and the Lambda
// functions behind API Gateway; the latter pass WithIdentity so tenant and
// principal come from the authorizer's context instead of API keys.
package api
