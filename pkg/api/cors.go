package api

import (
	"net/http"
	"slices"
	"strings"
)

// CORS policy. The API authenticates with bearer tokens or X-API-Key, never
// cookies, so answering any origin with "*" and no credentials exposes
// nothing a script could not already reach with the key it holds; deployers
// who want a closed list pass WithAllowedOrigins.
const (
	corsAllowHeaders  = "Authorization, X-API-Key, Content-Type, Accept, Idempotency-Key, X-Request-Id, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
	corsExposeHeaders = "Retry-After, Location, X-Request-Id, Content-Length, Content-Type, WWW-Authenticate, Allow, Mcp-Session-Id, X-Sessionbox-Source, X-Sessionbox-Checkpoint-At"
	corsMaxAge        = "600"
)

type corsPolicy struct {
	any     bool
	origins []string
}

func newCORSPolicy(origins []string) corsPolicy {
	if len(origins) == 0 || slices.Contains(origins, "*") {
		return corsPolicy{any: true}
	}
	return corsPolicy{origins: origins}
}

// allowOrigin returns the Access-Control-Allow-Origin value for origin, or
// "" when the origin is not allowed.
func (c corsPolicy) allowOrigin(origin string) string {
	if c.any {
		return "*"
	}
	if slices.Contains(c.origins, origin) {
		return origin
	}
	return ""
}

// cors adds CORS headers to responses for allowed origins and answers
// preflight requests itself: a preflight carries no credentials, so it must
// never reach authentication.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		h := w.Header()
		if !s.corsPolicy.any {
			h.Add("Vary", "Origin")
		}
		allowed := ""
		if origin != "" {
			allowed = s.corsPolicy.allowOrigin(origin)
		}
		if allowed != "" {
			h.Set("Access-Control-Allow-Origin", allowed)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		if !preflight {
			next.ServeHTTP(w, r)
			return
		}
		s.preflight(w, r, allowed != "")
	})
}

func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allowed bool) {
	methods := s.allowed(r)
	if len(methods) == 0 {
		writeProblem(w, r, newProblem(kindNotFound, "no route matches "+r.URL.Path))
		return
	}
	if !allowed {
		writeProblem(w, r, newProblem(kindForbidden, "origin "+r.Header.Get("Origin")+" is not allowed"))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("Allow", strings.Join(methods, ", "))
	w.WriteHeader(http.StatusNoContent)
}
