package api

import (
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// WithRateLimiter counts every authenticated request against its
// principal's rate: one key cannot take the stage's whole throttle, which
// API Gateway shares among every caller. A request over the rate is a 429
// problem with Retry-After.
func WithRateLimiter(l session.RateLimiter) Option { return func(s *Server) { s.limiter = l } }

// admit takes one request of id from the limiter, answering 429 itself
// when the principal's window is full. A limiter that fails admits: the
// limit protects the stage's fairness, and refusing everyone because its
// table is unreachable would be the outage it is meant to prevent.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, id identity) bool {
	if s.limiter == nil {
		return true
	}
	ok, retry, err := s.limiter.Take(r.Context(), id.tenant+"/"+id.principal, s.clock.Now())
	if err != nil {
		s.log.WarnContext(r.Context(), "rate limiter failed; request admitted",
			slog.String("requestId", requestID(r.Context())), slog.String("error", err.Error()))
		return true
	}
	if ok {
		return true
	}
	secs := max(1, int(math.Ceil(retry.Seconds())))
	p := newProblem(kindLimit, "this principal's request rate is used up; retry after "+strconv.Itoa(secs)+" s")
	p.retryAfterSecs = secs
	writeProblem(w, r, p)
	return false
}
