package lambdaemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Invoker runs one invocation of a function: an Emulator running a real
// bootstrap, or anything that answers as one.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (Response, error)
}

// Gateway emulates an API Gateway REST API with Lambda proxy integrations
// in front of Invokers, applying the rules a client meets on AWS:
//
//   - a request body reaches the function base64-encoded
//     (isBase64Encoded) when its Content-Type matches BinaryMediaTypes,
//     else as text;
//   - a buffered answer with isBase64Encoded goes out as bytes only when
//     the request's first Accept media type matches BinaryMediaTypes
//     (or they hold "*/*"); otherwise the client gets the base64 text;
//   - a streamed answer (transfer mode STREAM) goes out as the function
//     wrote it, whatever BinaryMediaTypes say;
//   - a REQUEST authorizer runs before every non-public route: an
//     "Unauthorized" error is 401, a policy that does not allow the
//     method's ARN 403, the context it returns reaches the function; with
//     AuthorizerCache on, a request missing an identity source is 401
//     without a call, and an answer is reused for every route and method
//     called with the same identity-source values (authcache.go);
//   - an unknown route is API Gateway's 403 "Missing Authentication
//     Token", which the stack maps to 404.
//
// Its gateway answers are problem+json, as the stack's gateway responses
// (infra/problems.go) make them.
type Gateway struct {
	// Stage prefixes every path the gateway serves ("" for none).
	Stage            string
	BinaryMediaTypes []string
	Routes           []StackRoute
	// Functions are the integrations by function name; Streamed names
	// those integrated with transfer mode STREAM.
	Functions map[string]Invoker
	Streamed  []string
	// Authorizer is the REQUEST authorizer; nil lets every call through
	// with no authorizer context.
	Authorizer Invoker
	// AuthorizerCache is the authorizer's results cache: off at zero TTL.
	AuthorizerCache AuthorizerCache
	// AllowedOrigins are the stack's allowedOrigins: with exactly one, its
	// gateway responses carry Access-Control-Allow-Origin for it, as
	// infra/problems.go makes them.
	AllowedOrigins []string

	cache authCache
}

// NewStackGateway is a Gateway configured as the synthesized stack
// configures API Gateway (StackBinaryMediaTypes, StackRoutes,
// StackStreamedFunctions, StackAuthorizerCache), stage "prod".
func NewStackGateway(functions map[string]Invoker, authorizer Invoker) *Gateway {
	return &Gateway{
		Stage: "prod", BinaryMediaTypes: StackBinaryMediaTypes, Routes: StackRoutes(),
		Functions: functions, Streamed: StackStreamedFunctions, Authorizer: authorizer,
		AuthorizerCache: StackAuthorizerCache(),
	}
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, g.stagePrefix())
	if !ok || path == "" {
		path = "/" + strings.TrimPrefix(path, "/")
	}
	route, params, found := g.match(r.Method, path)
	fn := g.Functions[route.Function]
	if !ok || !found || fn == nil {
		g.problem(w, http.StatusNotFound, "not-found", "Not found")
		return
	}
	ev, err := g.event(r, route, path, params)
	if err != nil {
		g.problem(w, http.StatusBadRequest, "", "Request rejected")
		return
	}
	if !route.Public && g.Authorizer != nil {
		authz, status := g.authorize(r, ev)
		if status != 0 {
			g.refuse(w, status)
			return
		}
		ev.RequestContext.Authorizer = authz
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		g.problem(w, http.StatusInternalServerError, "internal", "Internal error")
		return
	}
	res, err := fn.Invoke(r.Context(), payload)
	if err != nil || res.ErrorType != "" {
		g.problem(w, http.StatusBadGateway, "internal", "Internal error")
		return
	}
	if slices.Contains(g.Streamed, route.Function) {
		g.writeStreamed(w, res.Body)
		return
	}
	g.writeBuffered(w, r, res.Body)
}

func (g *Gateway) stagePrefix() string {
	if g.Stage == "" {
		return ""
	}
	return "/" + g.Stage
}

func (g *Gateway) refuse(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="sessionbox"`)
		g.problem(w, status, "unauthorized", "Unauthorized")
	case http.StatusForbidden:
		g.problem(w, status, "forbidden", "Forbidden")
	default:
		g.problem(w, status, "internal", "Internal error")
	}
}

// match finds the route for method and path, and its path parameters.
func (g *Gateway) match(method, path string) (StackRoute, map[string]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range g.Routes {
		if rt.Method != method {
			continue
		}
		if params, ok := matchPath(strings.Split(strings.Trim(rt.Path, "/"), "/"), segs); ok {
			return rt, params, true
		}
	}
	return StackRoute{}, nil, false
}

func matchPath(tmpl, segs []string) (map[string]string, bool) {
	if len(tmpl) != len(segs) {
		return nil, false
	}
	params := map[string]string{}
	for i, t := range tmpl {
		if name, ok := strings.CutPrefix(t, "{"); ok && strings.HasSuffix(name, "}") {
			if segs[i] == "" {
				return nil, false
			}
			params[strings.TrimSuffix(name, "}")] = segs[i]
			continue
		}
		if t != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// event is the proxy integration's input for r.
func (g *Gateway) event(r *http.Request, rt StackRoute, path string, params map[string]string) (events.APIGatewayProxyRequest, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return events.APIGatewayProxyRequest{}, fmt.Errorf("read body: %w", err)
	}
	ev := events.APIGatewayProxyRequest{
		Resource: rt.Path, Path: path, HTTPMethod: r.Method,
		Headers: map[string]string{}, MultiValueHeaders: map[string][]string{},
		QueryStringParameters: map[string]string{}, MultiValueQueryStringParameters: map[string][]string{},
		PathParameters: params, Body: string(body),
	}
	if len(body) > 0 && matchesBinary(g.BinaryMediaTypes, r.Header.Get("Content-Type")) {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	for k, vs := range r.Header {
		ev.MultiValueHeaders[k] = vs
		ev.Headers[k] = vs[len(vs)-1]
	}
	ev.Headers["Host"], ev.MultiValueHeaders["Host"] = r.Host, []string{r.Host}
	for k, vs := range r.URL.Query() {
		ev.MultiValueQueryStringParameters[k] = vs
		ev.QueryStringParameters[k] = vs[len(vs)-1]
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev.RequestContext = events.APIGatewayProxyRequestContext{
		Stage: g.Stage, Path: r.URL.Path, ResourcePath: rt.Path, HTTPMethod: r.Method,
		RequestID: requestID(), DomainName: r.Host, AccountID: "123456789012", APIID: "emulated",
		Identity: events.APIGatewayRequestIdentity{SourceIP: ip, UserAgent: r.UserAgent()},
	}
	return ev, nil
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// callAuthorizer invokes the REQUEST authorizer: its answer, or the status
// to refuse with (401 for its "Unauthorized" error).
func (g *Gateway) callAuthorizer(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayCustomAuthorizerResponse, int) {
	req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:                            "REQUEST",
		MethodArn:                       methodARN(ev),
		Resource:                        ev.Resource,
		Path:                            ev.Path,
		HTTPMethod:                      ev.HTTPMethod,
		Headers:                         ev.Headers,
		MultiValueHeaders:               ev.MultiValueHeaders,
		QueryStringParameters:           ev.QueryStringParameters,
		MultiValueQueryStringParameters: ev.MultiValueQueryStringParameters,
		PathParameters:                  ev.PathParameters,
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	res, err := g.Authorizer.Invoke(ctx, payload)
	switch {
	case err != nil:
		return nil, http.StatusInternalServerError
	case res.ErrorType != "" && strings.Contains(res.ErrorMessage, "Unauthorized"):
		return nil, http.StatusUnauthorized
	case res.ErrorType != "":
		return nil, http.StatusInternalServerError
	}
	var out events.APIGatewayCustomAuthorizerResponse
	if json.Unmarshal(res.Body, &out) != nil {
		return nil, http.StatusInternalServerError
	}
	return &out, 0
}

// methodARN is the ARN API Gateway names the called method by.
func methodARN(ev events.APIGatewayProxyRequest) string {
	return "arn:aws:execute-api:eu-west-1:123456789012:emulated/" + ev.RequestContext.Stage + "/" + ev.HTTPMethod + ev.Path
}

// writeBuffered answers with a buffered proxy integration's response.
func (g *Gateway) writeBuffered(w http.ResponseWriter, r *http.Request, raw []byte) {
	var res events.APIGatewayProxyResponse
	if err := json.Unmarshal(raw, &res); err != nil || res.StatusCode == 0 {
		g.problem(w, http.StatusBadGateway, "internal", "Internal error")
		return
	}
	body := []byte(res.Body)
	if res.IsBase64Encoded && matchesBinary(g.BinaryMediaTypes, firstAccept(r.Header.Get("Accept"))) {
		decoded, err := base64.StdEncoding.DecodeString(res.Body)
		if err != nil {
			g.problem(w, http.StatusBadGateway, "internal", "Internal error")
			return
		}
		body = decoded
	}
	writeHeaders(w, res.Headers, res.MultiValueHeaders)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(body)
}

// writeStreamed answers with a streamed response: a JSON prelude, eight
// NUL bytes, then the body as the function wrote it.
func (g *Gateway) writeStreamed(w http.ResponseWriter, raw []byte) {
	prelude, body, found := bytes.Cut(raw, make([]byte, 8))
	var p struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	}
	if !found || json.Unmarshal(prelude, &p) != nil {
		g.problem(w, http.StatusBadGateway, "internal", "Internal error")
		return
	}
	writeHeaders(w, p.Headers, p.MultiValueHeaders)
	w.WriteHeader(cmpStatus(p.StatusCode))
	_, _ = w.Write(body)
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

func writeHeaders(w http.ResponseWriter, single map[string]string, multi map[string][]string) {
	for k, vs := range multi {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for k, v := range single {
		w.Header().Set(k, v)
	}
}

// firstAccept is the first media type of an Accept header, without
// parameters: the one API Gateway decides binary responses by.
func firstAccept(accept string) string {
	first, _, _ := strings.Cut(accept, ",")
	return first
}

// matchesBinary reports whether a media type (a Content-Type or the first
// Accept) matches one of binaryMediaTypes; "*/*" matches anything, an
// absent type included, and "type/*" any subtype.
func matchesBinary(binaryMediaTypes []string, mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	for _, b := range binaryMediaTypes {
		b = strings.ToLower(strings.TrimSpace(b))
		switch {
		case b == "*/*":
			return true
		case mt == "":
		case b == mt:
			return true
		case strings.HasSuffix(b, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(b, "*")):
			return true
		}
	}
	return false
}

// problem is one of the stack's gateway responses.
func (g *Gateway) problem(w http.ResponseWriter, status int, slug, title string) {
	if len(g.AllowedOrigins) == 1 {
		w.Header().Set("Access-Control-Allow-Origin", g.AllowedOrigins[0])
		w.Header().Set("Vary", "Origin")
	}
	typ := "about:blank"
	if slug != "" {
		typ = "https://sessionbox.dev/problems/" + slug
	}
	body, _ := json.Marshal(map[string]any{"type": typ, "title": title, "status": status, "detail": title})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
