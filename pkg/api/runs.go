package api

import (
	"net/http"
	"net/url"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

type runBody struct {
	Code        *string `json:"code"`
	TimeoutSecs int     `json:"timeoutSecs"`
}

func (b *runBody) validate() *Problem { return requireCode(b.Code) }

func (s *Server) submitRun(w http.ResponseWriter, r *http.Request, id identity) {
	var b runBody
	key, ok := s.sessionBody(w, r, id, &b, true, b.validate)
	if !ok {
		return
	}
	idem := r.Header.Get("Idempotency-Key")
	logCode(r, *b.Code)
	run, err := s.mgr.SubmitRun(r.Context(), key, session.RunRequest{Code: *b.Code, TimeoutSecs: b.TimeoutSecs, IdempotencyKey: idem})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+url.PathEscape(run.ID))
	writeJSON(w, http.StatusAccepted, wire.RunAccepted{RunID: run.ID, Status: run.Status})
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, id identity) {
	runID := r.PathValue("runId")
	run, err := s.mgr.GetRun(r.Context(), id.tenant, id.principal, runID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := wire.Run{
		RunID: run.ID, SessionID: run.SessionID, Status: run.Status, Result: normalizeResult(run.Result),
		Error: run.Error, CreatedAt: timePtr(run.CreatedAt), StartedAt: timePtr(run.StartedAt), FinishedAt: timePtr(run.FinishedAt),
	}
	if run.ResultKey != "" {
		t, err := s.mgr.RunResultURL(r.Context(), id.tenant, id.principal, runID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.ResultURL, v.ResultExpiresAt = t.URL, timePtr(t.ExpiresAt)
	}
	writeJSON(w, http.StatusOK, v)
}
