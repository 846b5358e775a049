package api

import (
	"net/http"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// sessionView is a session as the API shows it.
type sessionView struct {
	SessionID        string            `json:"sessionId"`
	State            session.State     `json:"state"`
	Type             string            `json:"type,omitempty"`
	SandboxID        string            `json:"sandboxId,omitempty"`
	Template         string            `json:"template,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	PauseOnIdle      bool              `json:"pauseOnIdle"`
	IdleTimeoutSecs  int               `json:"idleTimeoutSecs,omitempty"`
	CreatedAt        *time.Time        `json:"createdAt,omitempty"`
	LastActivityAt   *time.Time        `json:"lastActivityAt,omitempty"`
	IdleDeadline     *time.Time        `json:"idleDeadline,omitempty"`
	LifetimeDeadline *time.Time        `json:"lifetimeDeadline,omitempty"`
}

func viewSession(s *session.Session) sessionView {
	v := sessionView{
		SessionID:        s.SessionID,
		State:            s.State,
		Type:             string(s.Type),
		SandboxID:        s.SandboxID,
		Template:         s.Template,
		Metadata:         s.Metadata,
		PauseOnIdle:      s.PauseOnIdle,
		IdleTimeoutSecs:  int(s.IdleTimeout.Seconds()),
		CreatedAt:        timePtr(s.CreatedAt),
		LastActivityAt:   timePtr(s.LastActivityAt),
		IdleDeadline:     timePtr(s.IdleDeadline),
		LifetimeDeadline: timePtr(s.LifetimeDeadline),
	}
	return v
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ identity) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type sessionList struct {
	Sessions   []sessionView `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
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
	out := sessionList{Sessions: make([]sessionView, 0, len(list)), NextCursor: next}
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
}

// Limits on what a caller may attach to a sandbox.
const (
	maxMapEntries    = 64
	maxEnvValueBytes = 32 << 10
	maxMetaBytes     = 256
	maxTemplateLen   = 128
	maxIdleSecs      = 24 * 3600
	maxTimeoutSecs   = 900 // the domain's cap, and API Gateway's longest stream
)

var (
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	templateName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)
	metaKey      = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)
)

func (b *startBody) validate() *Problem {
	var ps problems
	switch session.SandboxType(b.Type) {
	case "":
		b.Type = string(session.TypeCodeInterpreter)
	case session.TypeCodeInterpreter, session.TypeCustom:
	default:
		ps.check(false, `type must be "code_interpreter" or "custom"`)
	}
	ps.check(b.Template == "" || templateName.MatchString(b.Template), "template must be a template name or id of at most %d characters", maxTemplateLen)
	ps.check(b.Type != string(session.TypeCustom) || b.Template != "", `a "custom" sandbox needs a template`)
	ps.check(b.IdleTimeoutSecs >= 0 && b.IdleTimeoutSecs <= maxIdleSecs, "idleTimeoutSecs must be from 0 to %d", maxIdleSecs)
	validateEnvs(&ps, b.Envs)
	ps.check(len(b.Metadata) <= maxMapEntries, "metadata may hold at most %d entries", maxMapEntries)
	for k, v := range b.Metadata {
		ps.check(metaKey.MatchString(k), "metadata key %q must be 1 to 64 letters, digits or ._:/-", k)
		ps.check(len(v) <= maxMetaBytes && utf8.ValidString(v), "metadata value of %q must be valid UTF-8 of at most %d bytes", k, maxMetaBytes)
	}
	return ps.problem()
}

func validateEnvs(ps *problems, envs map[string]string) {
	ps.check(len(envs) <= maxMapEntries, "envs may hold at most %d variables", maxMapEntries)
	for k, v := range envs {
		ps.check(envName.MatchString(k), "env name %q must be letters, digits and _ and not start with a digit", k)
		ps.check(len(v) <= maxEnvValueBytes && !containsNUL(v), "env %q must be at most %d bytes without NUL", k, maxEnvValueBytes)
	}
}

func (s *Server) startSandbox(w http.ResponseWriter, r *http.Request, id identity) {
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var b startBody
	if p := s.decodeJSON(w, r, &b, false); p != nil {
		writeProblem(w, r, p)
		return
	}
	if p := b.validate(); p != nil {
		writeProblem(w, r, p)
		return
	}
	sess, err := s.mgr.Start(r.Context(), key, session.StartOptions{
		Type: session.SandboxType(b.Type), Template: b.Template, Envs: b.Envs, Metadata: b.Metadata,
		IdleTimeoutSecs: b.IdleTimeoutSecs, Pause: b.Pause,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewSession(sess))
}

func (s *Server) stopSandbox(w http.ResponseWriter, r *http.Request, id identity) {
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if p := s.decodeJSON(w, r, &struct{}{}, false); p != nil {
		writeProblem(w, r, p)
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
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
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

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
