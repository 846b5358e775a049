//go:build linux

package kernel

import (
	"crypto/subtle"
	"net/http"
)

const accessTokenHeader = "X-Access-Token"

// requireToken guards /execute: it runs code, so a sandbox with an access
// token only runs code for a caller that presents it (the SDKs send it on
// /execute as X-Access-Token).
func (s *Server) requireToken(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.AccessToken == "" {
			next(w, r)
			return
		}
		if _, sent := r.Header[http.CanonicalHeaderKey(accessTokenHeader)]; !sent {
			unauthorized(w, "missing X-Access-Token header: this sandbox requires its access token")
			return
		}
		if !s.tokenMatches(r) {
			unauthorized(w, "invalid X-Access-Token header: it does not match the sandbox's access token")
			return
		}
		next(w, r)
	}
}

// checkTokenIfSent guards /contexts*: the official SDK calls them without the
// token, so only a token that is sent must be the right one.
func (s *Server) checkTokenIfSent(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, sent := r.Header[http.CanonicalHeaderKey(accessTokenHeader)]
		if s.cfg.AccessToken != "" && sent && !s.tokenMatches(r) {
			unauthorized(w, "invalid X-Access-Token header: it does not match the sandbox's access token")
			return
		}
		next(w, r)
	}
}

func (s *Server) tokenMatches(r *http.Request) bool {
	got := r.Header.Get(accessTokenHeader)
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AccessToken)) == 1
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(msg + "\n"))
}
