package api

import (
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// checkpointView is a checkpoint of a session's workspace as the API shows it.
type checkpointView = session.CheckpointInfo

// checkpoint saves the session's workspace now.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionBody(w, r, id, &struct{}{}, false, nil)
	if !ok {
		return
	}
	info, err := s.mgr.Checkpoint(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, checkpointView(info))
}

// deleteSession removes the session, its sandbox and its workspace.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionOf(w, r, id)
	if !ok {
		return
	}
	if err := s.mgr.Delete(r.Context(), key); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
