package lambdaemu_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
	"github.com/sessionbox/sessionbox/pkg/session"
)

const authTenant = "acme"

// keyStore is the authorizer's key table: one key per principal.
type keyStore map[string]*session.APIKey

func (k keyStore) GetAPIKey(_ context.Context, hash string) (*session.APIKey, error) {
	if key, ok := k[hash]; ok {
		return key, nil
	}
	return nil, session.ErrNotFound
}

// realAuthorizer is pkg/authorizer behind an Invoker, as the authorizer
// function answers the Runtime API; calls counts its invocations.
func realAuthorizer(t *testing.T, bearerOnly bool, calls *atomic.Int64) (lambdaemu.Invoker, map[string]string) {
	t.Helper()
	keys, plain := keyStore{}, map[string]string{}
	for _, principal := range []string{"alice", "bob"} {
		p, k, err := session.NewAPIKey(authTenant, principal, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		keys[k.Hash], plain[principal] = k, p
	}
	a, err := authorizer.New(keys, authorizer.Config{Tenant: authTenant, BearerOnly: bearerOnly,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return invokerCtx(func(ctx context.Context, payload []byte) lambdaemu.Response {
		calls.Add(1)
		var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			return lambdaemu.Response{ErrorType: "errorString", ErrorMessage: err.Error()}
		}
		res, err := a.Handle(ctx, ev)
		if err != nil {
			return lambdaemu.Response{ErrorType: "errorString", ErrorMessage: err.Error()}
		}
		body, _ := json.Marshal(res)
		return lambdaemu.Response{Body: body}
	}), plain
}

type invokerCtx func(ctx context.Context, payload []byte) lambdaemu.Response

func (f invokerCtx) Invoke(ctx context.Context, payload []byte) (lambdaemu.Response, error) {
	return f(ctx, payload), nil
}

// whoAmI answers with the principal the authorizer's context names.
func whoAmI(payload []byte) lambdaemu.Response {
	var ev events.APIGatewayProxyRequest
	_ = json.Unmarshal(payload, &ev)
	principal, _ := ev.RequestContext.Authorizer["principal"].(string)
	res, _ := json.Marshal(events.APIGatewayProxyResponse{StatusCode: 200, Body: principal})
	return lambdaemu.Response{Body: res}
}

// stackGateway is NewStackGateway with the status and execute functions
// answering whoAmI, and the authorizer's clock in the test's hands.
func stackGateway(t *testing.T, az lambdaemu.Invoker, now func() time.Time) *httptest.Server {
	t.Helper()
	g := lambdaemu.NewStackGateway(map[string]lambdaemu.Invoker{
		"status": invokerFunc(whoAmI), "execute": invokerFunc(whoAmI)}, az)
	g.Streamed = nil
	g.AuthorizerCache.Now = now
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, srv *httptest.Server, method, path string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/prod"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// stackBearerOnly is the authorizer's BearerOnly as the stack sets it.
func stackBearerOnly(t *testing.T) bool {
	t.Helper()
	v, err := strconv.ParseBool(lambdaemu.StackAuthorizerEnv["SESSIONBOX_AUTH_BEARER_ONLY"])
	if err != nil {
		t.Fatalf("the stack's SESSIONBOX_AUTH_BEARER_ONLY: %v", err)
	}
	return v
}

// TestAuthorizerCachePoisoning replays the shape pkg/authorizer's
// BearerOnly closes: a caller sends "Authorization: Basic x" with a valid
// X-API-Key; the cache keys the answer on Authorization alone, so anyone
// who later sends "Authorization: Basic x", with no key, would be served
// as the key's owner. With the stack's settings (cache on Authorization,
// bearer-only authorizer) the first request is refused and nothing is
// cached; with bearer-only off the emulator shows the poisoning.
func TestAuthorizerCachePoisoning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		bearerOnly bool
		poisoned   bool
	}{
		{"stack settings", stackBearerOnly(t), false},
		{"bearer-only off", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			az, keys := realAuthorizer(t, tc.bearerOnly, &calls)
			srv := stackGateway(t, az, nil)
			send(t, srv, "GET", "/v1/sessions/s1/sandbox", map[string]string{"Authorization": "Basic eDp4", "X-API-Key": keys["alice"]})
			status, who := send(t, srv, "POST", "/v1/sessions/s1/execute", map[string]string{"Authorization": "Basic eDp4"})
			if poisoned := status == http.StatusOK && who == "alice"; poisoned != tc.poisoned {
				t.Fatalf("a request without a key got %d %q (poisoned %v, want %v)", status, who, poisoned, tc.poisoned)
			}
		})
	}
}

// TestAuthorizerCacheRule: with the stack's cache, a request without the
// identity source is 401 without an authorizer call; one answer serves
// every route and method with the same Authorization until the TTL ends;
// another value is another entry; a refusal is not cached.
func TestAuthorizerCacheRule(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	az, keys := realAuthorizer(t, stackBearerOnly(t), &calls)
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	srv := stackGateway(t, az, now)
	bearer := func(p string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[p]} }

	for i, step := range []struct {
		name           string
		before         func()
		method, path   string
		headers        map[string]string
		status         int
		who            string
		authorizerRuns int64
	}{
		{"no Authorization", nil, "GET", "/v1/sessions/s1/sandbox", map[string]string{"X-API-Key": keys["alice"]}, 401, "", 0},
		{"empty Authorization", nil, "GET", "/v1/sessions/s1/sandbox", map[string]string{"Authorization": ""}, 401, "", 0},
		{"first call", nil, "GET", "/v1/sessions/s1/sandbox", bearer("alice"), 200, "alice", 1},
		{"another route and method", nil, "POST", "/v1/sessions/s2/execute", bearer("alice"), 200, "alice", 1},
		{"another key", nil, "GET", "/v1/sessions", bearer("bob"), 200, "bob", 2},
		{"a bad key", nil, "GET", "/v1/sessions", map[string]string{"Authorization": "Bearer sbx_nope"}, 401, "", 3},
		{"the bad key again", nil, "GET", "/v1/sessions", map[string]string{"Authorization": "Bearer sbx_nope"}, 401, "", 4},
		{"just before the TTL", func() { advance(lambdaemu.StackAuthorizerCacheTTL - time.Second) }, "GET", "/v1/sessions", bearer("alice"), 200, "alice", 4},
		{"after the TTL", func() { advance(time.Second) }, "GET", "/v1/sessions", bearer("alice"), 200, "alice", 5},
	} {
		if step.before != nil {
			step.before()
		}
		status, who := send(t, srv, step.method, step.path, step.headers)
		if status != step.status || (status == 200 && who != step.who) || calls.Load() != step.authorizerRuns {
			t.Fatalf("step %d (%s): %d %q after %d authorizer calls; want %d %q after %d",
				i, step.name, status, who, calls.Load(), step.status, step.who, step.authorizerRuns)
		}
	}
}

// TestAuthorizerPolicyResource: a cached policy is checked against each
// method's ARN, so one that names a single method denies the others.
func TestAuthorizerPolicyResource(t *testing.T) {
	t.Parallel()
	az := invokerFunc(func(payload []byte) lambdaemu.Response {
		var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
		_ = json.Unmarshal(payload, &ev)
		body, _ := json.Marshal(events.APIGatewayCustomAuthorizerResponse{PrincipalID: "p",
			PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
				{Action: []string{"execute-api:Invoke"}, Effect: "Allow", Resource: []string{ev.MethodArn}}}},
			Context: map[string]any{"principal": "p"}})
		return lambdaemu.Response{Body: body}
	})
	srv := stackGateway(t, az, nil)
	h := map[string]string{"Authorization": "Bearer x"}
	for _, step := range []struct {
		method, path string
		status       int
	}{{"GET", "/v1/sessions/s1/sandbox", 200}, {"GET", "/v1/sessions/s1/sandbox", 200}, {"POST", "/v1/sessions/s1/execute", 403}} {
		if status, body := send(t, srv, step.method, step.path, h); status != step.status {
			t.Fatalf("%s %s: %d %s, want %d", step.method, step.path, status, body, step.status)
		}
	}
}
