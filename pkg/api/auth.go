package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/credential"
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
	key, err := credential.FromHeader(r.Header)
	if err != nil {
		return identity{}, session.Errorf(session.ErrUnauthorized, "%s", err.Error())
	}
	if s.keys != nil {
		if id, ok := s.keys.get(key, s.clock.Now()); ok {
			return id, nil
		}
	}
	// Authenticate is session.VerifyAPIKey, the authorizer's check: shape,
	// record by hash, revocation, tenant and principal.
	k, err := s.mgr.Authenticate(r.Context(), key)
	if err != nil {
		if errors.Is(err, session.ErrUnauthorized) || errors.Is(err, session.ErrNotFound) {
			s.log.InfoContext(r.Context(), "API key refused", slog.String("requestId", requestID(r.Context())),
				slog.String("reason", err.Error()))
			return identity{}, session.Errorf(session.ErrUnauthorized, "the API key is not valid")
		}
		return identity{}, err
	}
	if k == nil || k.Tenant == "" || k.Principal == "" {
		s.log.WarnContext(r.Context(), "API key record without an identity", slog.String("requestId", requestID(r.Context())))
		return identity{}, session.Errorf(session.ErrUnauthorized, "the API key is not valid")
	}
	id := identity{tenant: k.Tenant, principal: k.Principal}
	if s.keys != nil {
		s.keys.put(key, id, s.clock.Now())
	}
	return id, nil
}
