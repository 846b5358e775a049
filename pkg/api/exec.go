package api

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/wire"
)

type execBody struct {
	Code        *string           `json:"code"`
	TimeoutSecs int               `json:"timeoutSecs"`
	Envs        map[string]string `json:"envs"`
	Context     string            `json:"context"`
}

// validate checks what only the JSON shows: a missing "code" and an empty
// one are the same string to the Manager, which judges every value.
func (b *execBody) validate() *Problem {
	return requireCode(b.Code)
}

func requireCode(code *string) *Problem {
	if code == nil {
		return newProblem(kindInvalid, `"code" is required`)
	}
	return nil
}

// logCode notes code in the access log by hash and size only: code may hold
// secrets and is no business of a log.
func logCode(r *http.Request, code string) {
	sum := sha256.Sum256([]byte(code))
	logAttrs(r.Context(), slog.String("codeSha256", hex.EncodeToString(sum[:8])), slog.Int("codeBytes", len(code)))
}

// execute answers JSON, or a stream when the client asks for NDJSON (the
// older form of executeStream, kept for the clients that use it).
func (s *Server) execute(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "execute") {
		return
	}
	s.runExecute(w, r, id, wantsNDJSON(r))
}

// executeStream always answers a stream.
func (s *Server) executeStream(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiateStream(w, r, "execute/stream") {
		return
	}
	s.runExecute(w, r, id, true)
}

func (s *Server) runExecute(w http.ResponseWriter, r *http.Request, id identity, streamed bool) {
	var b execBody
	key, ok := s.sessionBody(w, r, id, &b, true, b.validate)
	if !ok {
		return
	}
	logCode(r, *b.Code)
	s.allowLongResponse(w, b.TimeoutSecs)
	req := session.ExecRequest{Code: *b.Code, TimeoutSecs: b.TimeoutSecs, Envs: b.Envs, Context: b.Context}
	if streamed {
		s.stream(w, r, func(onEvent func(session.Event)) (streamOutcome, error) {
			res, err := s.mgr.Execute(r.Context(), key, req, onEvent)
			return execOutcome(res), err
		})
		return
	}
	s.longJSON(w, r, func(onEvent func(session.Event)) (any, error) {
		res, err := s.mgr.Execute(r.Context(), key, req, onEvent)
		return normalizeResult(res), err
	})
}

// normalizeResult sends empty lists as [] rather than null, as documented.
func normalizeResult(res *session.ExecResult) *session.ExecResult {
	if res == nil {
		return nil
	}
	out := *res
	if out.Results == nil {
		out.Results = []session.Result{}
	}
	return &out
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionBody(w, r, id, &struct{}{}, false, nil)
	if !ok {
		return
	}
	if err := s.mgr.Reset(r.Context(), key); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// validateInstall names every bad package spec in one answer, by the domain's
// rules; the Manager checks the request as a whole.
func validateInstall(b *wire.InstallRequest) *Problem {
	var ps problems
	for _, spec := range b.Packages {
		ps.add(session.ValidatePackageSpec(spec))
	}
	if b.IndexURL != "" {
		ps.add(session.ValidateIndexURL(b.IndexURL))
	}
	return ps.problem()
}

func viewInstall(res *session.InstallResult) *wire.InstallResult {
	if res == nil {
		return nil
	}
	return &wire.InstallResult{Success: res.Success, ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr,
		DurationMs: res.DurationMs, Truncated: res.Truncated, Restarted: res.Restarted, Restored: res.Restored}
}

// install answers JSON, or a stream when the client asks for NDJSON (the
// older form of installStream).
func (s *Server) install(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "install") {
		return
	}
	s.runInstall(w, r, id, wantsNDJSON(r))
}

// installStream always answers a stream.
func (s *Server) installStream(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiateStream(w, r, "install/stream") {
		return
	}
	s.runInstall(w, r, id, true)
}

func (s *Server) runInstall(w http.ResponseWriter, r *http.Request, id identity, streamed bool) {
	var b wire.InstallRequest
	key, ok := s.sessionBody(w, r, id, &b, true, func() *Problem { return validateInstall(&b) })
	if !ok {
		return
	}
	s.allowLongResponse(w, 0)
	req := session.InstallRequest{Packages: b.Packages, IndexURL: b.IndexURL}
	if streamed {
		s.stream(w, r, func(onEvent func(session.Event)) (streamOutcome, error) {
			res, err := s.mgr.Install(r.Context(), key, req, onEvent)
			return installOutcome(res), err
		})
		return
	}
	s.longJSON(w, r, func(onEvent func(session.Event)) (any, error) {
		res, err := s.mgr.Install(r.Context(), key, req, onEvent)
		return viewInstall(res), err
	})
}
