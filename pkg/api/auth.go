package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// IdentityFunc takes a request's tenant and principal from somewhere the
// caller trusts (API Gateway's authorizer context), reporting ok=false when
// the request carries none.
type IdentityFunc func(*http.Request) (tenant, principal string, ok bool)

// identity is who is calling: sessions and runs are keyed by both parts, so
// one principal never reaches another's.
type identity struct {
	tenant, principal string
}

// maxKeyLen bounds what is hashed for a lookup; real keys are far shorter.
const maxKeyLen = 512

// authenticate resolves the caller or answers the request itself (401, or
// the store's failure) and returns ok=false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (identity, bool) {
	id, err := s.identify(r)
	if err != nil {
		if errors.Is(err, session.ErrUnauthorized) {
			writeProblem(w, r, newProblem(kindUnauthorized, domainDetail(err)))
		} else {
			s.fail(w, r, err)
		}
		return identity{}, false
	}
	if info := infoFrom(r.Context()); info != nil {
		info.tenant, info.principal = id.tenant, id.principal
	}
	return id, true
}

func (s *Server) identify(r *http.Request) (identity, error) {
	if s.identity != nil {
		tenant, principal, ok := s.identity(r)
		if !ok || tenant == "" || principal == "" {
			return identity{}, session.Errorf(session.ErrUnauthorized, "the request carries no authorized identity")
		}
		return identity{tenant: tenant, principal: principal}, nil
	}
	key, err := apiKeyFrom(r)
	if err != nil {
		return identity{}, err
	}
	if s.keys != nil {
		if id, ok := s.keys.get(key, time.Now()); ok {
			return id, nil
		}
	}
	k, err := s.mgr.Authenticate(r.Context(), key)
	if err != nil {
		if errors.Is(err, session.ErrUnauthorized) || errors.Is(err, session.ErrNotFound) {
			return identity{}, session.Errorf(session.ErrUnauthorized, "the API key is not valid")
		}
		return identity{}, err
	}
	// Authenticate looked the key up by its hash and refused unknown and
	// revoked keys; what it returns is the caller.
	if k == nil || k.Tenant == "" || k.Principal == "" {
		s.log.WarnContext(r.Context(), "API key record without an identity", slog.String("requestId", requestID(r.Context())))
		return identity{}, session.Errorf(session.ErrUnauthorized, "the API key is not valid")
	}
	id := identity{tenant: k.Tenant, principal: k.Principal}
	if s.keys != nil {
		s.keys.put(key, id, time.Now())
	}
	return id, nil
}

// apiKeyFrom reads the key from Authorization: Bearer or X-API-Key.
func apiKeyFrom(r *http.Request) (string, error) {
	key := ""
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", session.Errorf(session.ErrUnauthorized, "use Authorization: Bearer <key> or X-API-Key: <key>")
		}
		key = strings.TrimSpace(rest)
	} else {
		key = strings.TrimSpace(r.Header.Get("X-API-Key"))
	}
	if key == "" {
		return "", session.Errorf(session.ErrUnauthorized, "an API key is required: Authorization: Bearer <key> or X-API-Key: <key>")
	}
	if len(key) > maxKeyLen {
		return "", session.Errorf(session.ErrUnauthorized, "the API key is not valid")
	}
	return key, nil
}
