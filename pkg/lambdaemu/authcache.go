package lambdaemu

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// AuthorizerCache is API Gateway's results cache of a REQUEST authorizer.
// With TTL > 0 every identity source is required: a request that lacks one
// (or sends it empty) is refused 401 and the authorizer is not called. The
// authorizer's answer, policy and context, is kept for TTL under the
// identity sources' values alone, so it answers every route and method
// called with them until it expires: the policy is checked against each
// method's ARN, but the authorizer never sees the later requests. Whatever
// the authorizer reads beyond the identity sources (another header, the
// path) is therefore reused for requests that did not send it.
type AuthorizerCache struct {
	TTL time.Duration
	// IdentitySources are the header names of the cache key (API
	// Gateway's method.request.header.<name>).
	IdentitySources []string
	// Now is the cache's clock; time.Now when nil.
	Now func() time.Time
}

// authCache holds the cached answers of a Gateway.
type authCache struct {
	mu      sync.Mutex
	answers map[string]cachedAnswer
}

type cachedAnswer struct {
	res     *events.APIGatewayCustomAuthorizerResponse
	expires time.Time
}

func (c AuthorizerCache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// key is the cache key of r's identity sources; ok is false when one is
// missing.
func (c AuthorizerCache) key(h http.Header) (string, bool) {
	var b strings.Builder
	for _, name := range c.IdentitySources {
		v := h.Get(name)
		if v == "" {
			return "", false
		}
		b.WriteString(v)
		b.WriteByte(0)
	}
	return b.String(), true
}

func (a *authCache) get(key string, now time.Time) (*events.APIGatewayCustomAuthorizerResponse, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.answers[key]
	if !ok || !now.Before(e.expires) {
		delete(a.answers, key)
		return nil, false
	}
	return e.res, true
}

func (a *authCache) put(key string, res *events.APIGatewayCustomAuthorizerResponse, expires time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answers == nil {
		a.answers = map[string]cachedAnswer{}
	}
	a.answers[key] = cachedAnswer{res: res, expires: expires}
}

// authorize answers a non-public route's request: the authorizer context
// to hand on, or the status to refuse with. Only policies are cached: an
// "Unauthorized" error or a failure calls the authorizer again next time.
func (g *Gateway) authorize(r *http.Request, ev events.APIGatewayProxyRequest) (map[string]any, int) {
	c := g.AuthorizerCache
	if c.TTL <= 0 {
		res, status := g.callAuthorizer(r.Context(), ev)
		if status != 0 {
			return nil, status
		}
		return decide(res, methodARN(ev))
	}
	key, ok := c.key(r.Header)
	if !ok {
		return nil, http.StatusUnauthorized
	}
	res, ok := g.cache.get(key, c.now())
	if !ok {
		var status int
		if res, status = g.callAuthorizer(r.Context(), ev); status != 0 {
			return nil, status
		}
		g.cache.put(key, res, c.now().Add(c.TTL))
	}
	return decide(res, methodARN(ev))
}

// decide applies a policy to the method's ARN as API Gateway does: an
// explicit Deny wins, else an Allow must name the ARN; the context goes
// on with the principal.
func decide(res *events.APIGatewayCustomAuthorizerResponse, arn string) (map[string]any, int) {
	allowed := false
	for _, st := range res.PolicyDocument.Statement {
		if !matchesAny(st.Resource, arn) {
			continue
		}
		if !strings.EqualFold(st.Effect, "Allow") {
			return nil, http.StatusForbidden
		}
		allowed = true
	}
	if !allowed {
		return nil, http.StatusForbidden
	}
	authz := map[string]any{"principalId": res.PrincipalID}
	for k, v := range res.Context {
		authz[k] = v
	}
	return authz, 0
}

func matchesAny(patterns []string, arn string) bool {
	for _, p := range patterns {
		if wildcardMatch(p, arn) {
			return true
		}
	}
	return false
}

// wildcardMatch is IAM's resource match: "*" is any run of characters,
// "/" included, and "?" any one character.
func wildcardMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcardMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcardMatch(pattern[1:], s[1:])
	default:
		return s != "" && s[0] == pattern[0] && wildcardMatch(pattern[1:], s[1:])
	}
}
