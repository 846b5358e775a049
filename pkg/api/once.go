package api

import (
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

type onceBody struct {
	Code        *string           `json:"code"`
	TimeoutSecs int               `json:"timeoutSecs"`
	Envs        map[string]string `json:"envs"`
	Template    string            `json:"template"`
}

// executeOnce runs code in a sandbox of its own that is killed afterwards:
// no session is named, created or kept.
func (s *Server) executeOnce(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "execute") {
		return
	}
	s.runOnce(w, r, id, wantsNDJSON(r))
}

// executeOnceStream is executeOnce answering a stream.
func (s *Server) executeOnceStream(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiateStream(w, r, "execute/stream") {
		return
	}
	s.runOnce(w, r, id, true)
}

func (s *Server) runOnce(w http.ResponseWriter, r *http.Request, id identity, streamed bool) {
	var b onceBody
	if p := s.decodeJSON(w, r, &b, true); p != nil {
		writeProblem(w, r, p)
		return
	}
	if p := requireCode(b.Code); p != nil {
		writeProblem(w, r, p)
		return
	}
	logCode(r, *b.Code)
	s.allowLongResponse(w, b.TimeoutSecs)
	req := session.OnceRequest{Code: *b.Code, TimeoutSecs: b.TimeoutSecs, Envs: b.Envs, Template: b.Template}
	if streamed {
		s.stream(w, r, func(onEvent func(session.Event)) (streamOutcome, error) {
			res, err := s.mgr.ExecuteOnce(r.Context(), id.tenant, id.principal, req, onEvent)
			return execOutcome(res), err
		})
		return
	}
	s.longJSON(w, r, func(onEvent func(session.Event)) (any, error) {
		res, err := s.mgr.ExecuteOnce(r.Context(), id.tenant, id.principal, req, onEvent)
		return normalizeResult(res), err
	})
}
