package api

import (
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

func viewContext(c session.CodeContext) wire.CodeContext {
	return wire.CodeContext{ContextID: c.ID, Language: c.Language, Cwd: c.Cwd, CreatedAt: c.CreatedAt}
}

// createContext starts a context in the session's sandbox, starting the
// sandbox as execute would.
func (s *Server) createContext(w http.ResponseWriter, r *http.Request, id identity) {
	var body wire.ContextRequest
	key, ok := s.sessionBody(w, r, id, &body, false, nil)
	if !ok {
		return
	}
	c, err := s.mgr.CreateContext(r.Context(), key, session.ContextRequest{Language: body.Language, Cwd: body.Cwd})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, viewContext(*c))
}

// listContexts lists the contexts of the session's current sandbox.
func (s *Server) listContexts(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionOf(w, r, id)
	if !ok {
		return
	}
	cs, err := s.mgr.ListContexts(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.ContextList{Contexts: make([]wire.CodeContext, 0, len(cs))}
	for _, c := range cs {
		out.Contexts = append(out.Contexts, viewContext(c))
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteContext shuts a context down.
func (s *Server) deleteContext(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionOf(w, r, id)
	if !ok {
		return
	}
	if err := s.mgr.DeleteContext(r.Context(), key, r.PathValue("contextId")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// resetContext restarts a context's kernel.
func (s *Server) resetContext(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionBody(w, r, id, &struct{}{}, false, nil)
	if !ok {
		return
	}
	if err := s.mgr.ResetContext(r.Context(), key, r.PathValue("contextId")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
