package authorizer_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

const methodARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/sessions/s1/execute"

// newStore gives a real store on the in-process DynamoDB emulator.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client := localaws.DynamoDBClient(endpoint)
	if err := store.CreateTable(ctx, client, "sessionbox"); err != nil {
		t.Fatal(err)
	}
	return store.New(client, "sessionbox")
}

func seedKey(t *testing.T, s *store.Store, tenant, principal string) string {
	t.Helper()
	plain, key, err := session.NewAPIKey(tenant, principal, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutAPIKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	return plain
}

func request(headers map[string]string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	return events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: methodARN, Headers: headers}
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a, err := authorizer.New(s, authorizer.Config{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	good := seedKey(t, s, "acme", "alice")
	foreign := seedKey(t, s, "globex", "bob")
	revoked := seedKey(t, s, "acme", "carol")
	if err := s.RevokeAPIKey(context.Background(), session.HashAPIKey(revoked), time.Now()); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		headers   map[string]string
		principal string // empty: refused
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + good}, "alice"},
		{"bearer any case", map[string]string{"authorization": "bearer " + good}, "alice"},
		{"x-api-key", map[string]string{"X-API-Key": good}, "alice"},
		{"x-api-key lower case", map[string]string{"x-api-key": good}, "alice"},
		{"no credential", map[string]string{"Accept": "*/*"}, ""},
		{"unknown key", map[string]string{"Authorization": "Bearer sbx_nope"}, ""},
		{"basic scheme", map[string]string{"Authorization": "Basic " + good}, ""},
		{"basic scheme beside x-api-key", map[string]string{"Authorization": "Basic dXNlcjpwdw==", "X-API-Key": good}, "alice"},
		{"bearer before x-api-key", map[string]string{"Authorization": "Bearer " + good, "X-API-Key": foreign}, "alice"},
		{"bearer before a valid x-api-key", map[string]string{"Authorization": "Bearer " + foreign, "X-API-Key": good}, ""},
		{"empty bearer beside x-api-key", map[string]string{"Authorization": "Bearer ", "X-API-Key": good}, "alice"},
		{"two spellings agreeing", map[string]string{"X-API-Key": good, "x-api-key": good}, "alice"},
		{"two spellings differing", map[string]string{"X-API-Key": good, "x-api-key": foreign}, ""},
		{"malformed key", map[string]string{"X-API-Key": "sbx_" + strings.Repeat("a", 300)}, ""},
		{"revoked key", map[string]string{"X-API-Key": revoked}, ""},
		{"another tenant's key", map[string]string{"X-API-Key": foreign}, ""},
		{"key with extra text", map[string]string{"X-API-Key": good + "x"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := a.Handle(context.Background(), request(c.headers))
			if c.principal == "" {
				if err == nil || err.Error() != "Unauthorized" {
					t.Fatalf("want the Unauthorized error, got %+v, %v", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.PrincipalID != c.principal || res.Context["tenant"] != "acme" || res.Context["principal"] != c.principal {
				t.Fatalf("response = %+v", res)
			}
			st := res.PolicyDocument.Statement
			if len(st) != 1 || st[0].Effect != "Allow" || st[0].Action[0] != "execute-api:Invoke" ||
				st[0].Resource[0] != "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*" {
				t.Fatalf("policy = %+v", res.PolicyDocument)
			}
		})
	}
}

// brokenKeys fails every lookup, as a store outage would.
type brokenKeys struct{}

func (brokenKeys) GetAPIKey(context.Context, string) (*session.APIKey, error) {
	return nil, session.Errorf(session.ErrUnavailable, "store down")
}

func TestStoreOutageIsNotUnauthorized(t *testing.T) {
	t.Parallel()
	a, err := authorizer.New(brokenKeys{}, authorizer.Config{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Handle(context.Background(), request(map[string]string{"X-API-Key": "sbx_anything_0123456789"}))
	if err == nil || errors.Is(err, authorizer.ErrUnauthorized) {
		t.Fatalf("err = %v: an outage must not be cached as a bad key", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	if _, err := authorizer.New(brokenKeys{}, authorizer.Config{}); err == nil {
		t.Error("want an error without a tenant")
	}
	if _, err := authorizer.New(brokenKeys{}, authorizer.Config{Tenant: "a", JWT: &authorizer.JWTConfig{Issuer: "x"}}); err == nil {
		t.Error("want an error for an incomplete JWT config")
	}
}

// jwks serves one RSA public key as a JWKS document.
func jwks(t *testing.T, key *rsa.PublicKey, kid string) string {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestJWT(t *testing.T) {
	t.Parallel()
	signer, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cfg := authorizer.JWTConfig{Issuer: "https://idp.example", Audience: "sessionbox", JWKSURL: jwks(t, &signer.PublicKey, "k1")}
	a, err := authorizer.New(newStore(t), authorizer.Config{Tenant: "acme", JWT: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sign := func(key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": cfg.Issuer, "aud": cfg.Audience, "sub": "user-123",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	}
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }
	noneToken, _ := jwt.NewWithClaims(jwt.SigningMethodNone, valid()).SignedString(jwt.UnsafeAllowNoneSignatureType)

	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"valid", sign(signer, "k1", valid()), true},
		{"wrong issuer", sign(signer, "k1", with("iss", "https://evil.example")), false},
		{"wrong audience", sign(signer, "k1", with("aud", "other")), false},
		{"expired", sign(signer, "k1", with("exp", now.Add(-time.Hour).Unix())), false},
		{"no expiry", sign(signer, "k1", without("exp")), false},
		{"no subject", sign(signer, "k1", without("sub")), false},
		{"signed by another key", sign(stranger, "k1", valid()), false},
		{"alg none", noneToken, false},
		{"garbage with two dots", "a.b.c", false},
		{"subject with a store separator", sign(signer, "k1", with("sub", "a#P#b")), false},
		{"subject too long", sign(signer, "k1", with("sub", strings.Repeat("x", 201))), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := a.Handle(context.Background(), request(map[string]string{"Authorization": "Bearer " + c.token}))
			if !c.ok {
				if !errors.Is(err, authorizer.ErrUnauthorized) {
					t.Fatalf("want Unauthorized, got %+v, %v", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.PrincipalID != "jwt:user-123" || res.Context["principal"] != "jwt:user-123" ||
				res.Context["authMethod"] != "jwt" || res.Context["tenant"] != "acme" {
				t.Fatalf("response = %+v", res)
			}
		})
	}
}

// TestJWKSUnavailable: when the identity provider's keys cannot be had, the
// answer is an error API Gateway does not cache, not a refusal.
func TestJWKSUnavailable(t *testing.T) {
	t.Parallel()
	signer, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var up atomic.Bool
	good := jwks(t, &signer.PublicKey, "k1")
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(good)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, resp.Body)
	}))
	defer idp.Close()
	cfg := authorizer.JWTConfig{Issuer: "https://idp.example", Audience: "sessionbox", JWKSURL: idp.URL}
	a, err := authorizer.New(brokenKeys{}, authorizer.Config{Tenant: "acme", JWT: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": cfg.Issuer, "aud": cfg.Audience,
		"sub": "u1", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(signer)
	if err != nil {
		t.Fatal(err)
	}
	req := request(map[string]string{"Authorization": "Bearer " + signed})
	_, err = a.Handle(context.Background(), req)
	if err == nil || errors.Is(err, authorizer.ErrUnauthorized) {
		t.Fatalf("err = %v: an identity provider outage must not read as a bad token", err)
	}
	// Once the provider is back, the next token is accepted without
	// waiting for a background refresh.
	up.Store(true)
	res, err := a.Handle(context.Background(), req)
	if err != nil || res.PrincipalID != "jwt:u1" {
		t.Fatalf("after recovery: %+v, %v", res, err)
	}
}

// TestBearerOnly: an authorizer whose answers API Gateway caches keyed on
// Authorization reads that header alone. With X-API-Key read too, the
// answer for "Authorization: Basic x" beside alice's X-API-Key would be
// cached under "Basic x", and anyone sending "Basic x" would be alice for
// the cache's lifetime.
func TestBearerOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	a, err := authorizer.New(s, authorizer.Config{Tenant: "acme", BearerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	good := seedKey(t, s, "acme", "alice")
	cases := []struct {
		name      string
		headers   map[string]string
		principal string // empty: refused
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + good}, "alice"},
		{"bearer beside another x-api-key", map[string]string{"Authorization": "Bearer " + good, "X-API-Key": "sbx_other"}, "alice"},
		{"x-api-key alone", map[string]string{"X-API-Key": good}, ""},
		{"basic scheme beside x-api-key", map[string]string{"Authorization": "Basic dXNlcjpwdw==", "X-API-Key": good}, ""},
		{"empty bearer beside x-api-key", map[string]string{"Authorization": "Bearer ", "X-API-Key": good}, ""},
		{"token without scheme beside x-api-key", map[string]string{"Authorization": good, "X-API-Key": good}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := a.Handle(context.Background(), request(c.headers))
			if c.principal == "" {
				if err == nil || err.Error() != "Unauthorized" {
					t.Fatalf("want the Unauthorized error, got %+v, %v", res, err)
				}
				return
			}
			if err != nil || res.PrincipalID != c.principal {
				t.Fatalf("got %+v, %v; want %s", res, err, c.principal)
			}
		})
	}
}
