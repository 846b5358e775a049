package lambdaemu_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
)

// invokerFunc answers invocations in-process.
type invokerFunc func(payload []byte) lambdaemu.Response

func (f invokerFunc) Invoke(_ context.Context, payload []byte) (lambdaemu.Response, error) {
	return f(payload), nil
}

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")

// echoBuffered answers a buffered proxy response: the request body it got
// (decoded) as bytes, base64-encoded, and whether it came base64-encoded.
func echoBuffered(payload []byte) lambdaemu.Response {
	var ev events.APIGatewayProxyRequest
	_ = json.Unmarshal(payload, &ev)
	body := png
	if ev.Body != "" {
		body = []byte(ev.Body)
		if ev.IsBase64Encoded {
			body, _ = base64.StdEncoding.DecodeString(ev.Body)
		}
	}
	res, _ := json.Marshal(events.APIGatewayProxyResponse{
		StatusCode: 200, IsBase64Encoded: true, Body: base64.StdEncoding.EncodeToString(body),
		Headers: map[string]string{"Content-Type": "application/octet-stream", "X-Base64-In": map[bool]string{true: "yes", false: "no"}[ev.IsBase64Encoded]},
	})
	return lambdaemu.Response{Body: res}
}

func streamed(payload []byte) lambdaemu.Response {
	return lambdaemu.Response{
		Body:        append([]byte(`{"statusCode":200,"headers":{"Content-Type":"image/png"}}`+"\x00\x00\x00\x00\x00\x00\x00\x00"), png...),
		ContentType: "application/vnd.awslambda.http-integration-response",
	}
}

func gateway(binary []string) *httptest.Server {
	g := &lambdaemu.Gateway{
		BinaryMediaTypes: binary,
		Routes: []lambdaemu.StackRoute{
			{Function: "files", Method: "GET", Path: "/v1/sessions/{id}/files/content", Public: true},
			{Function: "files", Method: "PUT", Path: "/v1/sessions/{id}/files/content", Public: true},
			{Function: "stream", Method: "GET", Path: "/stream", Public: true},
		},
		Functions: map[string]lambdaemu.Invoker{"files": invokerFunc(echoBuffered), "stream": invokerFunc(streamed)},
		Streamed:  []string{"stream"},
	}
	return httptest.NewServer(g)
}

// TestGatewayBinaryRules holds the emulated gateway to API Gateway's
// documented rules for binary bodies with Lambda proxy integrations.
func TestGatewayBinaryRules(t *testing.T) {
	t.Parallel()
	octet := []string{"application/octet-stream"}
	all := []string{"*/*"}
	for _, c := range []struct {
		name   string
		binary []string
		path   string
		accept string
		bytes  bool // the client gets the bytes, not base64 text
	}{
		{"octet-stream only, Accept */*", octet, "/v1/sessions/s/files/content", "*/*", false},
		{"octet-stream only, no Accept", octet, "/v1/sessions/s/files/content", "", false},
		{"octet-stream only, browser Accept", octet, "/v1/sessions/s/files/content", "text/html,application/octet-stream", false},
		{"octet-stream only, Accept octet-stream", octet, "/v1/sessions/s/files/content", "application/octet-stream", true},
		{"image/* matches image/png", []string{"image/*"}, "/v1/sessions/s/files/content", "image/png", true},
		{"*/* and Accept */*", all, "/v1/sessions/s/files/content", "*/*", true},
		{"*/* and no Accept", all, "/v1/sessions/s/files/content", "", true},
		{"*/* and image/png", all, "/v1/sessions/s/files/content", "image/png", true},
		{"streamed, none configured", nil, "/stream", "*/*", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := gateway(c.binary)
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			want := png
			if !c.bytes {
				want = []byte(base64.StdEncoding.EncodeToString(png))
			}
			if res.StatusCode != 200 || !bytes.Equal(got, want) {
				t.Fatalf("status %d body %q, want %q", res.StatusCode, got, want)
			}
		})
	}
}

// TestGatewayRequestBodies: a body whose Content-Type matches
// binaryMediaTypes reaches the function base64-encoded; any other goes as
// text (and binary bytes would not survive that on AWS).
func TestGatewayRequestBodies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		binary      []string
		contentType string
		base64      string
	}{
		{[]string{"application/octet-stream"}, "application/octet-stream", "yes"},
		{[]string{"application/octet-stream"}, "image/png", "no"},
		{[]string{"application/octet-stream"}, "application/json", "no"},
		{[]string{"*/*"}, "image/png", "yes"},
		{[]string{"*/*"}, "application/json", "yes"},
		{[]string{"*/*"}, "", "yes"},
	} {
		srv := gateway(c.binary)
		req, _ := http.NewRequest("PUT", srv.URL+"/v1/sessions/s/files/content", bytes.NewReader(png))
		req.Header.Set("Accept", "application/octet-stream")
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		srv.Close()
		if got := res.Header.Get("X-Base64-In"); got != c.base64 {
			t.Errorf("%v, Content-Type %q: base64 to the function %s, want %s", c.binary, c.contentType, got, c.base64)
		}
	}
}

// TestGatewayUnknownRoute answers as the stack's gateway response does.
func TestGatewayUnknownRoute(t *testing.T) {
	t.Parallel()
	srv := gateway(nil)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 404 || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("unknown route: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// TestStackMatchesInfra holds the emulated gateway's configuration to the
// CDK stack's source (infra is its own module): binary media types,
// streamed functions and routes.
func TestStackMatchesInfra(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "infra", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	api, fns := read("api.go"), read("functions.go")

	m := regexp.MustCompile(`BinaryMediaTypes:\s*jsii\.Strings\(([^)]*)\)`).FindStringSubmatch(api)
	if m == nil {
		t.Fatal("infra/api.go: no BinaryMediaTypes found")
	}
	var binary []string
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
		binary = append(binary, q[1])
	}
	if !slices.Equal(binary, lambdaemu.StackBinaryMediaTypes) {
		t.Errorf("infra binaryMediaTypes %q, emulator %q", binary, lambdaemu.StackBinaryMediaTypes)
	}

	var streamed []string
	for _, s := range regexp.MustCompile(`\{name: "(\w+)",[^}]*streams: true`).FindAllStringSubmatch(fns, -1) {
		streamed = append(streamed, s[1])
	}
	if !slices.Equal(streamed, lambdaemu.StackStreamedFunctions) {
		t.Errorf("infra streams %q, emulator %q", streamed, lambdaemu.StackStreamedFunctions)
	}

	var routes []string
	for _, r := range regexp.MustCompile(`\{fn: "(\w+)", method: "(\w+)", path: (s(?: \+ )?)?(?:"([^"]*)")?(, public: true)?\}`).FindAllStringSubmatch(api, -1) {
		path := r[4]
		if r[3] != "" {
			path = "/v1/sessions/{id}" + path
		}
		routes = append(routes, strings.Join([]string{r[1], r[2], path, map[bool]string{true: "public"}[r[5] != ""]}, " "))
	}
	var emulated []string
	for _, r := range lambdaemu.StackRoutes() {
		emulated = append(emulated, strings.Join([]string{r.Function, r.Method, r.Path, map[bool]string{true: "public"}[r.Public]}, " "))
	}
	if !slices.Equal(routes, emulated) {
		t.Errorf("infra routes\n%s\nemulator\n%s", strings.Join(routes, "\n"), strings.Join(emulated, "\n"))
	}
	checkAuthorizerSettings(t, api, fns, read("stack.go"))
}

// checkAuthorizerSettings holds the authorizer cache's settings
// (StackAuthorizerCache, StackAuthorizerEnv) to the stack's defaults.
func checkAuthorizerSettings(t *testing.T, api, fns, stack string) {
	t.Helper()
	var sources []string
	if m := regexp.MustCompile(`IdentitySources:\s*jsii\.Strings\(([^\n]*)\),\n`).FindStringSubmatch(api); m != nil {
		for _, h := range regexp.MustCompile(`IdentitySource_Header\(jsii\.String\("([^"]+)"\)\)`).FindAllStringSubmatch(m[1], -1) {
			sources = append(sources, h[1])
		}
	}
	if !slices.Equal(sources, lambdaemu.StackAuthorizerIdentitySources) {
		t.Errorf("infra identity sources %q, emulator %q", sources, lambdaemu.StackAuthorizerIdentitySources)
	}
	m := regexp.MustCompile(`const authCacheMinutes = (\d+)`).FindStringSubmatch(api)
	if m == nil || m[1]+"m0s" != lambdaemu.StackAuthorizerCacheTTL.String() {
		t.Errorf("infra authCacheMinutes %v, emulator TTL %v", m, lambdaemu.StackAuthorizerCacheTTL)
	}
	env := map[string]string{}
	for _, e := range regexp.MustCompile(`(?s)case "authorizer":\s*if !cfg\.AcceptXAPIKey \{.*?env\[(\w+)\] = jsii\.String\("([^"]*)"\)`).FindAllStringSubmatch(stack, -1) {
		name := regexp.MustCompile(e[1] + `\s*=\s*"(\w+)"`).FindStringSubmatch(fns)
		if name == nil {
			t.Fatalf("infra/functions.go does not define %s", e[1])
		}
		env[name[1]] = e[2]
	}
	if !maps.Equal(env, lambdaemu.StackAuthorizerEnv) {
		t.Errorf("infra sets the cached authorizer's environment %v, emulator %v", env, lambdaemu.StackAuthorizerEnv)
	}
}
