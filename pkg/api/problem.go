package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/sessionbox/sessionbox/pkg/problem"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// problemBase prefixes every problem type URI (pkg/problem).
const problemBase = problem.Base

const contentTypeProblem = "application/problem+json"

// Problem is an RFC 9457 problem details object. RequestID is an extension
// member so a caller can quote it when reporting trouble.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"requestId,omitempty"`

	retryAfterSecs int
	allow          string
	// generic is set when Detail is the kind's stock text: the error
	// carried none a user can act on, so the request names its subject.
	generic bool
}

// problemKind is one stable (type, title, status) triple, defined with its
// sentinel error in pkg/problem, which the Go client reads answers with.
type problemKind = problem.Kind

// Short names for the kinds the handlers send.
var (
	kindInvalid      = problem.Invalid
	kindUnauthorized = problem.Unauthorized
	kindForbidden    = problem.Forbidden
	kindNotFound     = problem.NotFound
	kindMethod       = problem.Method
	kindNotAccept    = problem.NotAccept
	kindTooLarge     = problem.TooLarge
	kindMediaType    = problem.MediaType
	kindStorage      = problem.Storage
	kindInternal     = problem.Internal
	kindTimeout      = problem.Timeout
	kindLimit        = problem.Limit
)

func newProblem(k problemKind, detail string) *Problem {
	return &Problem{Type: k.Type(), Title: k.Title, Status: k.Status, Detail: detail}
}

// problemFor turns an error from the Manager into a problem. The second
// result reports whether the error was unexpected (a 5xx the operator must
// look at), so the caller logs it.
func problemFor(err error) (*Problem, bool) {
	if k, ok := problem.Of(err); ok {
		p := newProblem(k, k.Generic)
		p.generic = true
		var se *session.Error
		if errors.As(err, &se) {
			if se.Detail != "" {
				p.Detail, p.generic = se.Detail, false
			}
			if se.RetryAfter > 0 {
				p.retryAfterSecs = int(math.Ceil(se.RetryAfter.Seconds()))
			}
		}
		return p, k.Status >= 500
	}
	if errors.Is(err, context.DeadlineExceeded) {
		p := newProblem(kindTimeout, kindTimeout.Generic)
		p.generic = true
		return p, true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return newProblem(kindTooLarge, "the request body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes"), false
	}
	return newProblem(kindInternal, kindInternal.Generic), true
}

// writeProblem sends p as application/problem+json, filling in the
// request's id and path.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	info := infoFrom(r.Context())
	if info != nil {
		p.RequestID = info.requestID
		info.problemType = p.Type
	}
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeProblem)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if p.retryAfterSecs > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfterSecs))
	}
	if p.allow != "" {
		h.Set("Allow", p.allow)
	}
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="sessionbox"`)
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// fail reports err from the Manager to the client, logging it when it is
// not the client's fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if s.clientGone(r, err) {
		return
	}
	p, unexpected := problemOf(r, err)
	if unexpected {
		s.log.ErrorContext(r.Context(), "request failed",
			slog.String("requestId", requestID(r.Context())),
			slog.Int("status", p.Status),
			slog.String("error", err.Error()))
	}
	writeProblem(w, r, p)
}

// domainDetail is the detail of a domain validation error, as a user reads
// it.
func domainDetail(err error) string {
	var se *session.Error
	if errors.As(err, &se) && se.Detail != "" {
		return se.Detail
	}
	return err.Error()
}

// clientGone reports (and logs) a failure caused by the client hanging up:
// whatever the Manager made of the cancellation, nobody is left to answer
// and nothing went wrong on our side.
func (s *Server) clientGone(r *http.Request, err error) bool {
	if r.Context().Err() == nil {
		return false
	}
	s.log.InfoContext(r.Context(), "client went away",
		slog.String("requestId", requestID(r.Context())), slog.String("error", err.Error()))
	return true
}

// problemOf is problemFor for a request: a stock detail names the session
// or run the request is about, so no problem leaves its subject unsaid.
func problemOf(r *http.Request, err error) (*Problem, bool) {
	p, unexpected := problemFor(err)
	if !p.generic {
		return p, unexpected
	}
	if id := r.PathValue("id"); id != "" {
		p.Detail = fmt.Sprintf("session %q: %s", id, p.Detail)
	} else if id := r.PathValue("runId"); id != "" {
		p.Detail = fmt.Sprintf("run %q: %s", id, p.Detail)
	}
	return p, unexpected
}
