package api

import (
	"net/http"
	"net/url"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// The helpers below read what a route takes from HTTP (the session id of
// the path, a JSON body, the query) and answer the first problem with it
// themselves; ok=false then means the response is written.

// sessionOf reads the route's {id} as the caller's session.
func (s *Server) sessionOf(w http.ResponseWriter, r *http.Request, id identity) (session.Key, bool) {
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return key, false
	}
	return key, true
}

// sessionBody reads the route's {id} and its JSON body into dst, then runs
// check (which may be nil) on what was decoded: what a body must hold that
// only its JSON shows, like a required field. The values are the
// Manager's to judge.
func (s *Server) sessionBody(w http.ResponseWriter, r *http.Request, id identity, dst any, required bool, check func() *Problem) (session.Key, bool) {
	key, p := sessionKey(r, id)
	if p == nil {
		p = s.decodeJSON(w, r, dst, required)
	}
	if p == nil && check != nil {
		p = check()
	}
	if p != nil {
		writeProblem(w, r, p)
		return key, false
	}
	return key, true
}

// sessionFile reads the route's {id}, its query and the sandbox path in
// the "path" parameter: def when absent, required when def is "".
func (s *Server) sessionFile(w http.ResponseWriter, r *http.Request, id identity, def string) (session.Key, url.Values, string, bool) {
	key, p := sessionKey(r, id)
	var q url.Values
	if p == nil {
		q, p = query(r)
	}
	var target string
	if p == nil {
		target, p = pathParam(q, def)
	}
	if p != nil {
		writeProblem(w, r, p)
		return key, nil, "", false
	}
	return key, q, target, true
}

// negotiate answers 406 itself when the client takes neither JSON nor
// NDJSON from a route that streams (what names it in the detail).
func negotiate(w http.ResponseWriter, r *http.Request, what string) bool {
	w.Header().Add("Vary", "Accept")
	if !acceptable(r) {
		writeProblem(w, r, newProblem(kindNotAccept, what+" answers application/json or "+contentTypeNDJSON))
		return false
	}
	return true
}

// negotiateStream answers 406 itself when the client of a streaming route
// takes neither NDJSON nor problems (what names the route in the detail).
func negotiateStream(w http.ResponseWriter, r *http.Request, what string) bool {
	if !acceptsStream(r) {
		writeProblem(w, r, newProblem(kindNotAccept, what+" answers "+contentTypeNDJSON))
		return false
	}
	return true
}
