package api

import (
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

func viewSession(s *session.Session) wire.Session {
	v := wire.Session{
		SessionID:             s.SessionID,
		State:                 string(s.State),
		Type:                  string(s.Type),
		SandboxID:             s.SandboxID,
		Template:              s.Template,
		Metadata:              s.Metadata,
		PauseOnIdle:           s.PauseOnIdle,
		IdleTimeoutSecs:       int(s.IdleTimeout.Seconds()),
		CreatedAt:             timePtr(s.CreatedAt),
		LastActivityAt:        timePtr(s.LastActivityAt),
		IdleDeadline:          timePtr(s.IdleDeadline),
		LifetimeDeadline:      timePtr(s.LifetimeDeadline),
		CheckpointProblem:     s.CheckpointProblem,
		TimeoutRefreshProblem: s.TimeoutRefreshProblem,
		Restored:              s.Restored,
	}
	if s.NoPersist {
		v.Persist = new(bool)
	}
	if !s.LastCheckpoint.At.IsZero() {
		c := s.LastCheckpoint
		v.LastCheckpoint = &c
	}
	return v
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ identity) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// maxCursorLen bounds the opaque cursor a client sends back.
const maxCursorLen = 2048

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, id identity) {
	q, p := query(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	limit, p := intParam(q, "limit", 20, 1, 100)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	cursor := q.Get("cursor")
	if len(cursor) > maxCursorLen || !printableASCII(cursor) {
		writeProblem(w, r, newProblem(kindInvalid, `query parameter "cursor" is not a cursor this API returned`))
		return
	}
	list, next, err := s.mgr.List(r.Context(), id.tenant, id.principal, limit, cursor)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.SessionList{Sessions: make([]wire.Session, 0, len(list)), NextCursor: next}
	for _, ss := range list {
		out.Sessions = append(out.Sessions, viewSession(ss))
	}
	writeJSON(w, http.StatusOK, out)
}

type startBody struct {
	Type            string            `json:"type"`
	Template        string            `json:"template"`
	Envs            map[string]string `json:"envs"`
	Metadata        map[string]string `json:"metadata"`
	IdleTimeoutSecs int               `json:"idleTimeoutSecs"`
	Pause           bool              `json:"pause"`
	Persist         *bool             `json:"persist"`
}

func (s *Server) startSandbox(w http.ResponseWriter, r *http.Request, id identity) {
	var b startBody
	key, ok := s.sessionBody(w, r, id, &b, false, nil)
	if !ok {
		return
	}
	// The Manager judges the options (ErrInvalid, 400, with its detail):
	// its rules are the only ones.
	sess, err := s.mgr.Start(r.Context(), key, session.StartOptions{
		Type: session.SandboxType(b.Type), Template: b.Template, Envs: b.Envs, Metadata: b.Metadata,
		IdleTimeoutSecs: b.IdleTimeoutSecs, Pause: b.Pause, Persist: b.Persist,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSession(sess))
}

func (s *Server) stopSandbox(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionBody(w, r, id, &struct{}{}, false, nil)
	if !ok {
		return
	}
	sess, err := s.mgr.Stop(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSession(sess))
}

func (s *Server) sandboxStatus(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionOf(w, r, id)
	if !ok {
		return
	}
	sess, err := s.mgr.Status(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSession(sess))
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
