package api

import (
	"net/http"
)

// sandboxMetrics answers the resource use of the session's sandbox: now,
// and the samples the provider kept recently.
func (s *Server) sandboxMetrics(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionOf(w, r, id)
	if !ok {
		return
	}
	m, err := s.mgr.Metrics(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}
