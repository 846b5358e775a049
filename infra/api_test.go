package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// wantRoutes is the API's route table (pkg/api/openapi.json) with the function serving
// each route; public routes have no authorizer.
var wantRoutes = []struct {
	method, path, fn string
	public           bool
}{
	{"POST", "/v1/sessions/{id}/sandbox/start", "start", false},
	{"POST", "/v1/sessions/{id}/sandbox/stop", "stop", false},
	{"POST", "/v1/sessions/{id}/checkpoint", "stop", false},
	{"DELETE", "/v1/sessions/{id}", "stop", false},
	{"GET", "/v1/sessions/{id}/sandbox", "status", false},
	{"GET", "/v1/sessions/{id}/sandbox/metrics", "status", false},
	{"GET", "/v1/sessions", "status", false},
	{"GET", "/v1/runs/{runId}", "status", false},
	{"GET", "/healthz", "status", true},
	{"GET", "/v1/openapi.json", "status", true},
	{"POST", "/v1/sessions/{id}/execute", "execute", false},
	{"POST", "/v1/sessions/{id}/execute/stream", "execute", false},
	{"POST", "/v1/sessions/{id}/reset", "execute", false},
	{"POST", "/v1/sessions/{id}/runs", "execute", false},
	{"POST", "/v1/execute", "execute", false},
	{"POST", "/v1/sessions/{id}/contexts", "execute", false},
	{"GET", "/v1/sessions/{id}/contexts", "execute", false},
	{"DELETE", "/v1/sessions/{id}/contexts/{contextId}", "execute", false},
	{"POST", "/v1/sessions/{id}/contexts/{contextId}/reset", "execute", false},
	{"POST", "/v1/sessions/{id}/commands", "execute", false},
	{"GET", "/v1/sessions/{id}/commands", "execute", false},
	{"GET", "/v1/sessions/{id}/commands/{commandId}", "execute", false},
	{"GET", "/v1/sessions/{id}/commands/{commandId}/output", "execute", false},
	{"POST", "/v1/sessions/{id}/commands/{commandId}/kill", "execute", false},
	{"POST", "/v1/execute/stream", "execute", false},
	{"POST", "/v1/sessions/{id}/install", "install", false},
	{"POST", "/v1/sessions/{id}/install/stream", "install", false},
	{"GET", "/v1/sessions/{id}/files", "files", false},
	{"DELETE", "/v1/sessions/{id}/files", "files", false},
	{"GET", "/v1/sessions/{id}/files/content", "files", false},
	{"PUT", "/v1/sessions/{id}/files/content", "files", false},
	{"POST", "/v1/sessions/{id}/files/upload-url", "files", false},
	{"POST", "/v1/sessions/{id}/files/import", "files", false},
	{"POST", "/v1/sessions/{id}/files/download-url", "files", false},
	{"POST", "/v1/sessions/{id}/files/upload-urls", "fetch", false},
	{"POST", "/v1/mcp", "mcp", false},
}

// wantPlaygroundRoutes serve the playground page from the status function,
// without the authorizer, unless the stack is synthesized with
// playground=false.
var wantPlaygroundRoutes = []struct {
	method, path, fn string
	public           bool
}{
	{"GET", "/", "status", true},
	{"GET", "/playground/{file}", "status", true},
}

// expectedRoutes is wantRoutes with the playground's when v has it.
func expectedRoutes(v variant) []struct {
	method, path, fn string
	public           bool
} {
	if v.noPlayground {
		return wantRoutes
	}
	return append(append(wantRoutes[:0:0], wantRoutes...), wantPlaygroundRoutes...)
}

var streamingFns = map[string]bool{"start": true, "stop": true, "execute": true, "install": true, "fetch": true, "mcp": true}

// method is one synthesized API method with its path resolved.
type method struct {
	id    string
	verb  string
	path  string
	props map[string]any
}

// methods resolves every AWS::ApiGateway::Method to "VERB /path".
func (s synthed) methods(t *testing.T) map[string]method {
	t.Helper()
	apiID, _ := s.only(t, "AWS::ApiGateway::RestApi")
	paths := map[string]string{}
	var resolve func(id string) string
	resolve = func(id string) string {
		if p, ok := paths[id]; ok {
			return p
		}
		r := props(s.res[id])
		parent := ""
		if ref(r["ParentId"]) != apiID {
			parent = resolve(ref(r["ParentId"]))
		}
		paths[id] = parent + "/" + r["PathPart"].(string)
		return paths[id]
	}
	out := map[string]method{}
	for id, m := range s.ofType("AWS::ApiGateway::Method") {
		p := props(m)
		path := "/"
		if ref(p["ResourceId"]) != apiID {
			path = resolve(ref(p["ResourceId"]))
		}
		key := p["HttpMethod"].(string) + " " + path
		if _, dup := out[key]; dup {
			t.Errorf("two methods for %s", key)
		}
		out[key] = method{id: id, verb: p["HttpMethod"].(string), path: path, props: p}
	}
	return out
}

func checkRoutes(t *testing.T, s synthed, v variant) {
	ms := s.methods(t)
	authID, _ := s.only(t, "AWS::ApiGateway::Authorizer")
	want := map[string]bool{}
	for _, r := range expectedRoutes(v) {
		key := r.method + " " + r.path
		want[key] = true
		m, ok := ms[key]
		if !ok {
			t.Errorf("route %s missing", key)
			continue
		}
		fnID, _ := s.function(t, r.fn)
		in := m.props["Integration"].(map[string]any)
		uri := jsonOf(in["Uri"])
		if in["Type"] != "AWS_PROXY" || !strings.Contains(uri, fnID) {
			t.Errorf("%s: integration %s %s, want AWS_PROXY to %s", key, in["Type"], uri, r.fn)
		}
		stream := streamingFns[r.fn]
		if got := in["ResponseTransferMode"] == "STREAM"; got != stream {
			t.Errorf("%s: streaming = %v, want %v", key, got, stream)
		}
		if stream && (!strings.Contains(uri, "2021-11-15/functions/") || !strings.Contains(uri, "/response-streaming-invocations") || in["TimeoutInMillis"] != 900000.0) {
			t.Errorf("%s: streaming integration uri %s timeout %v", key, uri, in["TimeoutInMillis"])
		}
		if !stream && (strings.Contains(uri, "response-streaming") || in["TimeoutInMillis"] != nil) {
			t.Errorf("%s: buffered integration uri %s timeout %v", key, uri, in["TimeoutInMillis"])
		}
		// No function outlives its integration: past the integration's
		// timeout (29 s unless set) the client has a 504 and retries.
		limit := 29000.0
		if ms, ok := in["TimeoutInMillis"].(float64); ok {
			limit = ms
		}
		if _, fn := s.function(t, r.fn); fn["Timeout"].(float64)*1000 > limit {
			t.Errorf("%s: %s runs up to %v s behind an integration that gives up after %v ms", key, r.fn, fn["Timeout"], limit)
		}
		if r.public {
			if m.props["AuthorizationType"] != "NONE" || m.props["AuthorizerId"] != nil {
				t.Errorf("%s is public but has authorization %v %v", key, m.props["AuthorizationType"], m.props["AuthorizerId"])
			}
		} else if m.props["AuthorizationType"] != "CUSTOM" || ref(m.props["AuthorizerId"]) != authID {
			t.Errorf("%s: authorization %v %v, want the Lambda authorizer", key, m.props["AuthorizationType"], jsonOf(m.props["AuthorizerId"]))
		}
	}
	var extra, preflight []string
	for key, m := range ms {
		if want[key] {
			continue
		}
		if m.verb != "OPTIONS" {
			extra = append(extra, key)
			continue
		}
		preflight = append(preflight, key)
		in := m.props["Integration"].(map[string]any)
		if m.props["AuthorizationType"] != "NONE" || in["Type"] != "MOCK" {
			t.Errorf("%s: preflight must be an unauthorized MOCK, is %v %v", key, m.props["AuthorizationType"], in["Type"])
		}
		// With binaryMediaTypes */* a preflight answers 500 unless its
		// MOCK integration converts to text.
		if in["ContentHandling"] != "CONVERT_TO_TEXT" {
			t.Errorf("%s: preflight content handling %v, want CONVERT_TO_TEXT", key, in["ContentHandling"])
		}
		// A browser may send every header the OpenAPI document lists.
		allowed := jsonOf(in["IntegrationResponses"])
		for _, h := range append(openAPIHeaders(t), "Authorization", "Content-Type", "Accept") {
			if !regexp.MustCompile(`Access-Control-Allow-Headers":"'[^']*\b` + regexp.QuoteMeta(h) + `\b`).MatchString(allowed) {
				t.Errorf("%s: preflight does not allow %s: %s", key, h, allowed)
			}
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("routes not in the route table: %v", extra)
	}
	if len(v.origins) == 0 && len(preflight) > 0 {
		t.Errorf("CORS preflight without allowed origins: %v", preflight)
	}
	if len(v.origins) > 0 {
		for _, r := range expectedRoutes(v) {
			if _, ok := ms["OPTIONS "+r.path]; !ok {
				t.Errorf("no CORS preflight on %s", r.path)
			}
		}
	}
}

func checkAuthorizer(t *testing.T, s synthed, v variant) {
	_, a := s.only(t, "AWS::ApiGateway::Authorizer")
	p := props(a)
	fnID, _ := s.function(t, "authorizer")
	if p["Type"] != "REQUEST" || !strings.Contains(jsonOf(p["AuthorizerUri"]), fnID) {
		t.Errorf("authorizer %v %s", p["Type"], jsonOf(p["AuthorizerUri"]))
	}
	if v.acceptXAPIKey {
		if p["AuthorizerResultTtlInSeconds"] != 0.0 || p["IdentitySource"] != nil {
			t.Errorf("acceptXApiKey: ttl %v identity source %v, want 0 and none", p["AuthorizerResultTtlInSeconds"], p["IdentitySource"])
		}
	} else if p["AuthorizerResultTtlInSeconds"] != 300.0 || p["IdentitySource"] != "method.request.header.Authorization" {
		t.Errorf("ttl %v identity source %v, want 300 and the Authorization header", p["AuthorizerResultTtlInSeconds"], p["IdentitySource"])
	}
	perms := 0
	for _, perm := range s.ofType("AWS::Lambda::Permission") {
		pp := props(perm)
		if ref(pp["FunctionName"]) == fnID && pp["Principal"] == "apigateway.amazonaws.com" {
			perms++
		}
	}
	if perms != 1 {
		t.Errorf("%d API Gateway permissions on the authorizer, want 1", perms)
	}
}

func checkStage(t *testing.T, s synthed, v variant) {
	_, api := s.only(t, "AWS::ApiGateway::RestApi")
	if jsonOf(props(api)["EndpointConfiguration"]) != `{"Types":["REGIONAL"]}` {
		t.Errorf("endpoint %s, want REGIONAL", jsonOf(props(api)["EndpointConfiguration"]))
	}
	// Binary bodies reach every client as bytes whatever its Accept
	// (pkg/lambdaemu's gateway applies API Gateway's rules with "*/*").
	if jsonOf(props(api)["BinaryMediaTypes"]) != `["*/*"]` {
		t.Errorf("binaryMediaTypes %s, want [\"*/*\"]", jsonOf(props(api)["BinaryMediaTypes"]))
	}
	// The account-wide role API Gateway needs to write access logs.
	wantAccount := 1
	if v.noAccountRole {
		wantAccount = 0
	}
	s.count(t, "AWS::ApiGateway::Account", wantAccount)
	_, st := s.only(t, "AWS::ApiGateway::Stage")
	p := props(st)
	settings := p["MethodSettings"].([]any)[0].(map[string]any)
	if settings["ThrottlingRateLimit"] != v.rate || settings["ThrottlingBurstLimit"] != v.burst ||
		settings["HttpMethod"] != "*" || settings["ResourcePath"] != "/*" {
		t.Errorf("stage throttling %s, want rate %v burst %v on every method", jsonOf(settings), v.rate, v.burst)
	}
	if p["TracingEnabled"] != !v.guards {
		t.Errorf("stage X-Ray tracing %v, want %v", p["TracingEnabled"], !v.guards)
	}
	if settings["LoggingLevel"] != "ERROR" || settings["DataTraceEnabled"] != false {
		t.Errorf("stage execution logging %s, want ERROR without data traces", jsonOf(settings))
	}
	checkWAF(t, s, v)
	logSet := p["AccessLogSetting"].(map[string]any)
	lg := ref(logSet["DestinationArn"])
	if s.res[lg]["Type"] != "AWS::Logs::LogGroup" || props(s.res[lg])["RetentionInDays"] != v.retentionDays {
		t.Errorf("access log destination %s", jsonOf(logSet["DestinationArn"]))
	}
	var fields map[string]string
	if err := json.Unmarshal([]byte(logSet["Format"].(string)), &fields); err != nil {
		t.Fatalf("access log format is not JSON: %v", err)
	}
	for _, k := range []string{"requestId", "status", "principal", "integrationError"} {
		if !strings.HasPrefix(fields[k], "$context.") {
			t.Errorf("access log field %q = %q", k, fields[k])
		}
	}
}

// checkWAF: a web ACL on the stage only with wafWebAcl, its body rules
// counted (bodies are code and files).
func checkWAF(t *testing.T, s synthed, v variant) {
	acls := s.ofType("AWS::WAFv2::WebACL")
	if !v.guards {
		if len(acls) != 0 {
			t.Errorf("%d web ACLs without wafWebAcl", len(acls))
		}
		return
	}
	aclID, acl := s.only(t, "AWS::WAFv2::WebACL")
	_, assoc := s.only(t, "AWS::WAFv2::WebACLAssociation")
	stageID, _ := s.only(t, "AWS::ApiGateway::Stage")
	a := jsonOf(props(assoc))
	if !strings.Contains(a, aclID) || !strings.Contains(a, stageID) && !strings.Contains(a, "/stages/") {
		t.Errorf("web ACL association %s", a)
	}
	rules := jsonOf(props(acl)["Rules"])
	for _, want := range []string{`"AggregateKeyType":"IP"`, "AWSManagedRulesCommonRuleSet", "AWSManagedRulesAmazonIpReputationList",
		`{"ActionToUse":{"Count":{}},"Name":"SizeRestrictions_BODY"}`} {
		if !strings.Contains(rules, want) {
			t.Errorf("web ACL rules lack %s: %s", want, rules)
		}
	}
}

func checkGatewayResponses(t *testing.T, s synthed, v variant) {
	want := map[string]string{
		"UNAUTHORIZED": "401", "ACCESS_DENIED": "403", "MISSING_AUTHENTICATION_TOKEN": "404",
		"THROTTLED": "429", "QUOTA_EXCEEDED": "429", "INTEGRATION_TIMEOUT": "504", "DEFAULT_4XX": "", "DEFAULT_5XX": "",
	}
	got := map[string]bool{}
	for id, r := range s.ofType("AWS::ApiGateway::GatewayResponse") {
		p := props(r)
		typ, _ := p["ResponseType"].(string)
		got[typ] = true
		status, _ := p["StatusCode"].(string)
		if w, ok := want[typ]; !ok || status != w {
			t.Errorf("%s: %s status %q", id, typ, status)
		}
		hdr, _ := p["ResponseParameters"].(map[string]any)
		if hdr["gatewayresponse.header.Content-Type"] != "'application/problem+json'" {
			t.Errorf("%s: content type %v", typ, hdr["gatewayresponse.header.Content-Type"])
		}
		wantOrigin := any(nil)
		if len(v.origins) == 1 {
			wantOrigin = "'" + v.origins[0] + "'"
		}
		if got := hdr["gatewayresponse.header.Access-Control-Allow-Origin"]; got != wantOrigin {
			t.Errorf("%s: Access-Control-Allow-Origin %v, want %v", typ, got, wantOrigin)
		}
		body := p["ResponseTemplates"].(map[string]any)["application/json"].(string)
		// Fill in what API Gateway substitutes, then it must be a problem.
		body = strings.ReplaceAll(body, "$context.error.messageString", `"Unauthorized"`)
		var prob map[string]any
		if err := json.Unmarshal([]byte(body), &prob); err != nil {
			t.Errorf("%s: template is not JSON: %v", typ, err)
			continue
		}
		if prob["type"] == nil || prob["title"] == nil || prob["detail"] != "Unauthorized" {
			t.Errorf("%s: problem %v", typ, prob)
		}
		// With the cache on, X-API-Key alone gets the gateway's 401: the
		// body says which header to send.
		hint, _ := prob["hint"].(string)
		if wantHint := typ == "UNAUTHORIZED" && !v.acceptXAPIKey; wantHint != strings.Contains(hint, "Authorization: Bearer") {
			t.Errorf("%s: hint %q (acceptXApiKey %v)", typ, hint, v.acceptXAPIKey)
		}
		if status != "" && jsonOf(prob["status"]) != status {
			t.Errorf("%s: problem status %v, response %s", typ, prob["status"], status)
		}
	}
	for typ := range want {
		if !got[typ] {
			t.Errorf("no gateway response for %s", typ)
		}
	}
}

// openAPIHeaders are the request headers the API's OpenAPI document names.
func openAPIHeaders(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../pkg/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`"in":\s*"header",\s*"name":\s*"([^"]+)"|"name":\s*"([^"]+)",\s*"in":\s*"header"`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1]+m[2])
	}
	if len(out) == 0 {
		t.Fatal("no header parameters found in the OpenAPI document")
	}
	return out
}
