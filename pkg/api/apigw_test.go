package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/apigw"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// authorizerIdentity is how the Lambda functions take the caller from the
// REQUEST authorizer's context.
func authorizerIdentity(r *http.Request) (string, string, bool) {
	a := apigw.Authorizer(r.Context())
	tenant, _ := a["tenant"].(string)
	principal, _ := a["principal"].(string)
	return tenant, principal, tenant != "" && principal != ""
}

func proxyEvent(method, path, body string, headers map[string]string, authorizer map[string]any) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{HTTPMethod: method, Path: path, Body: body, Headers: headers,
		RequestContext: events.APIGatewayProxyRequestContext{Authorizer: authorizer}}
}

// TestThroughAPIGateway serves the API the way the Lambda functions do:
// proxy events, the caller from the authorizer, buffered and streamed.
func TestThroughAPIGateway(t *testing.T) {
	t.Parallel()
	fake := newFake()
	h := New(fake, WithIdentity(authorizerIdentity))
	caller := map[string]any{"tenant": "acme", "principal": "dana"}

	t.Run("buffered", func(t *testing.T) {
		res, err := apigw.Buffered(h)(context.Background(), proxyEvent("GET", "/v1/sessions/s1/sandbox", "", nil, caller))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("status %d %v: %s", res.StatusCode, err, res.Body)
		}
		if k := fake.lastKey(); k != (session.Key{Tenant: "acme", Principal: "dana", SessionID: "s1"}) {
			t.Fatalf("key %+v", k)
		}
	})
	t.Run("no authorizer context", func(t *testing.T) {
		res, err := apigw.Buffered(h)(context.Background(), proxyEvent("GET", "/v1/sessions/s1/sandbox", "", nil, nil))
		ct := res.MultiValueHeaders["Content-Type"]
		if err != nil || res.StatusCode != 401 || len(ct) != 1 || ct[0] != contentTypeProblem {
			t.Fatalf("status %d %v %v: %s", res.StatusCode, err, res.MultiValueHeaders, res.Body)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		fake.execute = func(_ context.Context, _ session.Key, _ session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
			onEvent(session.Event{Stdout: "one\n"})
			return &session.ExecResult{Success: true, Stdout: "one\n"}, nil
		}
		res, err := apigw.Streaming(h)(context.Background(), proxyEvent("POST", "/v1/sessions/s1/execute", `{"code":"print('one')"}`,
			map[string]string{"Accept": contentTypeNDJSON, "Content-Type": "application/json"}, caller))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("status %v %v", res, err)
		}
		sc := bufio.NewScanner(res.Body)
		var types []string
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			types = append(types, l["type"].(string))
		}
		if len(types) != 2 || types[0] != "stdout" || types[1] != "done" {
			t.Fatalf("lines %v", types)
		}
	})
}
