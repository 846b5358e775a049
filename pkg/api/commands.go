package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// maxCommandAttach is how long one reattachment may stream: as long as
// API Gateway streams a response. A longer command is attached to again.
const maxCommandAttach = 15 * time.Minute

type commandBody struct {
	Cmd         *string           `json:"cmd"`
	Cwd         string            `json:"cwd"`
	Envs        map[string]string `json:"envs"`
	TimeoutSecs int               `json:"timeoutSecs"`
	Background  bool              `json:"background"`
	User        string            `json:"user"`
}

// validate checks what only the JSON shows; the Manager judges the values.
func (b *commandBody) validate() *Problem {
	if b.Cmd == nil {
		return newProblem(kindInvalid, `"cmd" is required: a shell command line, run by bash -l -c`)
	}
	return nil
}

func (b *commandBody) request() session.CommandRequest {
	return session.CommandRequest{Cmd: *b.Cmd, Cwd: b.Cwd, Envs: b.Envs, TimeoutSecs: b.TimeoutSecs, Background: b.Background, User: b.User}
}

// logCommand notes a command in the access log by hash and size only, as
// code is: a command line may hold secrets.
func logCommand(r *http.Request, cmd string) {
	sum := sha256.Sum256([]byte(cmd))
	logAttrs(r.Context(), slog.String("cmdSha256", hex.EncodeToString(sum[:8])), slog.Int("cmdBytes", len(cmd)))
}

// runCommand runs a command to its end (JSON, or NDJSON live), or starts
// it in the background (202 with its id).
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "commands") {
		return
	}
	var b commandBody
	key, ok := s.sessionBody(w, r, id, &b, true, b.validate)
	if !ok {
		return
	}
	logCommand(r, *b.Cmd)
	req := b.request()
	if req.Background {
		started, err := s.mgr.StartCommand(r.Context(), key, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Location", r.URL.Path+"/"+started.CommandID)
		writeJSON(w, http.StatusAccepted, started)
		return
	}
	s.allowLongResponse(w, b.TimeoutSecs)
	if wantsNDJSON(r) {
		s.stream(w, r, func(onEvent func(session.Event)) (streamOutcome, error) {
			res, err := s.mgr.RunCommand(r.Context(), key, req, onEvent)
			return commandOutcome(res), err
		})
		return
	}
	s.longJSON(w, r, func(onEvent func(session.Event)) (any, error) {
		return s.mgr.RunCommand(r.Context(), key, req, onEvent)
	})
}

func (s *Server) listCommands(w http.ResponseWriter, r *http.Request, id identity) {
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	list, err := s.mgr.ListCommands(r.Context(), key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Commands []session.CommandInfo `json:"commands"`
	}{list})
}

// getCommand reattaches to a command's output (NDJSON: what it printed
// while nobody listened, then live output, then its end) or answers its
// status (JSON) without waiting.
func (s *Server) getCommand(w http.ResponseWriter, r *http.Request, id identity) {
	if !negotiate(w, r, "commands/{commandId}") {
		return
	}
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	cid := r.PathValue("commandId")
	if wantsNDJSON(r) {
		s.allowLongResponse(w, int(s.commandAttach.Seconds()))
		s.stream(w, r, func(onEvent func(session.Event)) (streamOutcome, error) {
			res, err := s.attachFor(r.Context(), key, cid, onEvent)
			return commandOutcome(res), err
		})
		return
	}
	info, err := s.mgr.CommandStatus(r.Context(), key, cid)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// attachFor follows a command for at most commandAttach, a streamed
// response's longest life behind API Gateway; a command still running
// then ends the stream with a failure line saying to attach again.
func (s *Server) attachFor(ctx context.Context, key session.Key, cid string, onEvent func(session.Event)) (*session.CommandResult, error) {
	actx, cancel := context.WithTimeout(ctx, s.commandAttach)
	defer cancel()
	res, err := s.mgr.AttachCommand(actx, key, cid, onEvent)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return nil, &session.Error{Kind: session.ErrTimeout, Err: err, Detail: fmt.Sprintf(
			"command %q still runs after %s attached to it; attach again to follow it", cid, s.commandAttach)}
	}
	return res, err
}

// readCommandOutput answers what a background command printed since the
// last read, waiting up to waitSecs for its end; the read cursor lives in
// the sandbox beside the output, so an answer cut short is the only way to
// lose any, and the answer names the files holding all of it.
func (s *Server) readCommandOutput(w http.ResponseWriter, r *http.Request, id identity) {
	key, p := sessionKey(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	wait, p := intParam(r.URL.Query(), "waitSecs", 0, 0, int(session.MaxCommandReadWait/time.Second))
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	out, err := s.mgr.ReadCommand(r.Context(), key, r.PathValue("commandId"), time.Duration(wait)*time.Second)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) killCommand(w http.ResponseWriter, r *http.Request, id identity) {
	key, ok := s.sessionBody(w, r, id, &struct{}{}, false, nil)
	if !ok {
		return
	}
	if err := s.mgr.KillCommand(r.Context(), key, r.PathValue("commandId")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
