package credential_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/authorizer"
	"github.com/sessionbox/sessionbox/pkg/credential"
	"github.com/sessionbox/sessionbox/pkg/localaws"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store"
)

// noSandboxes is a provider nothing here reaches: listing sessions reads
// the store only.
type noSandboxes struct{ session.Sandboxes }

// listingManager is the real Manager, noting who the API listed sessions
// for: that is whom the API took the caller to be.
type listingManager struct {
	*session.Manager
	mu                sync.Mutex
	tenant, principal string
}

func (m *listingManager) List(ctx context.Context, tenant, principal string, limit int, cursor string) ([]*session.Session, string, error) {
	m.mu.Lock()
	m.tenant, m.principal = tenant, principal
	m.mu.Unlock()
	return m.Manager.List(ctx, tenant, principal, limit, cursor)
}

func (m *listingManager) caller() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, p := m.tenant, m.principal
	m.tenant, m.principal = "", ""
	return t, p
}

// TestCallersAgree sends one table of requests through the three places
// that accept API keys: the Lambda authorizer's handler, the API served
// locally, and Manager.Authenticate given what the extractor took. Each
// must accept the same requests as the same principal of tenant acme, and
// refuse the rest.
func TestCallersAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	endpoint, stop, err := localaws.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	db := localaws.DynamoDBClient(endpoint)
	if err := store.CreateTable(ctx, db, "sessionbox"); err != nil {
		t.Fatal(err)
	}
	st := store.New(db, "sessionbox")
	seed := func(tenant, principal string) string {
		plain, rec, err := session.NewAPIKey(tenant, principal, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutAPIKey(ctx, rec); err != nil {
			t.Fatal(err)
		}
		return plain
	}
	alice, bob, foreign, revoked := seed("acme", "alice"), seed("acme", "bob"), seed("globex", "carol"), seed("acme", "dave")
	if err := st.RevokeAPIKey(ctx, session.HashAPIKey(revoked), time.Now()); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	az, err := authorizer.New(st, authorizer.Config{Tenant: "acme", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := session.NewManager(session.Config{Tenant: "acme"}, session.Deps{Store: st, Sandboxes: noSandboxes{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	listing := &listingManager{Manager: mgr}
	srv := api.New(listing, api.WithLogger(quiet))

	viaAuthorizer := func(t *testing.T, hs []header) string {
		res, err := az.Handle(ctx, events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST",
			MethodArn: "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/v1/sessions", Headers: asMap(hs)})
		switch {
		case errors.Is(err, authorizer.ErrUnauthorized):
			return ""
		case err != nil:
			t.Fatalf("authorizer: %v", err)
		case res.Context["tenant"] != "acme":
			t.Fatalf("authorizer allowed tenant %v", res.Context["tenant"])
		}
		return res.PrincipalID
	}
	viaAPI := func(t *testing.T, hs []header) string {
		req := httptest.NewRequest(http.MethodGet, "/v1/sessions", nil)
		req.Header = asHTTP(hs)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		tenant, principal := listing.caller()
		switch rec.Code {
		case http.StatusUnauthorized:
			if principal != "" || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("API: 401 after listing for %q, WWW-Authenticate %q", principal, rec.Header().Get("WWW-Authenticate"))
			}
			return ""
		case http.StatusOK:
			if tenant != "acme" {
				t.Fatalf("API served tenant %q", tenant)
			}
			return principal
		}
		t.Fatalf("API: status %d: %s", rec.Code, rec.Body)
		return ""
	}
	viaManager := func(t *testing.T, hs []header) string {
		token, err := credential.FromHeader(asHTTP(hs))
		if err != nil {
			return ""
		}
		k, err := mgr.Authenticate(ctx, token)
		switch {
		case errors.Is(err, session.ErrUnauthorized):
			return ""
		case err != nil:
			t.Fatalf("Manager.Authenticate: %v", err)
		}
		return k.Principal
	}

	cases := []struct {
		name      string
		headers   []header
		principal string // empty: refused
	}{
		{"bearer", []header{{"Authorization", "Bearer " + alice}}, "alice"},
		{"x-api-key", []header{{"X-API-Key", bob}}, "bob"},
		{"names in lower case", []header{{"authorization", "bearer " + bob}}, "bob"},
		{"bearer wins over x-api-key", []header{{"Authorization", "Bearer " + alice}, {"X-API-Key", bob}}, "alice"},
		{"no fallback from a refused bearer", []header{{"Authorization", "Bearer " + foreign}, {"X-API-Key", alice}}, ""},
		{"basic ignored beside x-api-key", []header{{"Authorization", "Basic dXNlcjpwdw=="}, {"X-API-Key", bob}}, "bob"},
		{"basic alone", []header{{"Authorization", "Basic dXNlcjpwdw=="}}, ""},
		{"no credential", []header{{"Accept", "application/json"}}, ""},
		{"another tenant's key", []header{{"X-API-Key", foreign}}, ""},
		{"revoked key", []header{{"Authorization", "Bearer " + revoked}}, ""},
		{"unknown key", []header{{"X-API-Key", "sbx_unknown_0123456789abcdef"}}, ""},
		{"key too long", []header{{"X-API-Key", alice + strings.Repeat("a", session.MaxAPIKeyLen)}}, ""},
		{"key too short", []header{{"X-API-Key", "sbx_0123456789"}}, ""},
		{"key with foreign characters", []header{{"X-API-Key", alice[:20] + "." + alice[21:]}}, ""},
		{"key without its prefix", []header{{"X-API-Key", strings.TrimPrefix(alice, "sbx_")}}, ""},
		{"x-api-key twice, different", []header{{"X-API-Key", alice}, {"x-api-key", bob}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{
				"authorizer":           viaAuthorizer(t, c.headers),
				"API":                  viaAPI(t, c.headers),
				"Manager.Authenticate": viaManager(t, c.headers),
			}
			for caller, p := range got {
				if p != c.principal {
					t.Errorf("%s: principal %q, want %q", caller, p, c.principal)
				}
			}
		})
	}
}
