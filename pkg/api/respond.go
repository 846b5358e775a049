package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// writeJSON sends v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// timePtr omits zero times from responses instead of sending year 1.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// sessionKey validates the {id} path segment and keys it by the caller.
func sessionKey(r *http.Request, id identity) (session.Key, *Problem) {
	sid := r.PathValue("id")
	if err := session.ValidateSessionID(sid); err != nil {
		return session.Key{}, newProblem(kindInvalid, domainDetail(err))
	}
	return session.Key{Tenant: id.tenant, Principal: id.principal, SessionID: sid}, nil
}

// query parses the query string strictly: a malformed one or a repeated
// parameter is a client error rather than something silently dropped.
func query(r *http.Request) (url.Values, *Problem) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newProblem(kindInvalid, "malformed query string: "+err.Error())
	}
	for name, vs := range q {
		if len(vs) > 1 {
			return nil, newProblem(kindInvalid, "query parameter "+strconv.Quote(name)+" is given more than once")
		}
	}
	return q, nil
}

// intParam reads an optional integer query parameter within [min, max].
func intParam(q url.Values, name string, def, min, max int) (int, *Problem) {
	raw, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(raw[0])
	if err != nil || n < min || n > max {
		return 0, newProblem(kindInvalid, "query parameter "+strconv.Quote(name)+" must be an integer from "+
			strconv.Itoa(min)+" to "+strconv.Itoa(max))
	}
	return n, nil
}

// pathParam reads and cleans a sandbox path from the query.
func pathParam(q url.Values, def string) (string, *Problem) {
	raw, ok := q["path"]
	if !ok {
		if def == "" {
			return "", newProblem(kindInvalid, `query parameter "path" is required`)
		}
		raw = []string{def}
	}
	p, err := session.CleanPath(raw[0])
	if err != nil {
		return "", newProblem(kindInvalid, domainDetail(err))
	}
	return p, nil
}
