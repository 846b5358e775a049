package api

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/session"
)

const contentTypeNDJSON = "application/x-ndjson"

// streamLine is one NDJSON line of a streamed execute or install:
//
//	{"type":"stdout","text":"..."}            output as it happens
//	{"type":"stderr","text":"..."}
//	{"type":"result","result":{...}}          a rich result (execute)
//	{"type":"error","error":{name,value,traceback}}  the code raised
//	{"type":"done","result":{...}}            last line: the whole result
//	{"type":"error","problem":{...}}          last line: the call failed
type streamLine struct {
	Type    string             `json:"type"`
	Text    string             `json:"text,omitempty"`
	Result  any                `json:"result,omitempty"`
	Error   *session.ExecError `json:"error,omitempty"`
	Problem *Problem           `json:"problem,omitempty"`
}

// wantsNDJSON reports whether the client asked for a live stream.
func wantsNDJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, params, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil &&
			mt == contentTypeNDJSON && params["q"] != "0" {
			return true
		}
	}
	return false
}

// acceptable reports whether the client can take JSON or NDJSON at all.
func acceptable(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "application/*", "application/json", contentTypeNDJSON, contentTypeProblem:
			return true
		}
	}
	return false
}

// ndjsonStream writes lines as they come and flushes each. The response
// starts with the first line, so a call that fails before producing any
// output still gets its proper status and problem.
type ndjsonStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	closed  bool
	broken  bool
}

func newNDJSONStream(w http.ResponseWriter) *ndjsonStream {
	return &ndjsonStream{w: w, rc: http.NewResponseController(w)}
}

func (st *ndjsonStream) send(line streamLine) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sendLocked(line)
}

func (st *ndjsonStream) sendLocked(line streamLine) {
	if st.closed || st.broken {
		return
	}
	if !st.started {
		h := st.w.Header()
		h.Set("Content-Type", contentTypeNDJSON)
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		// Proxies that buffer would hold the stream back.
		h.Set("X-Accel-Buffering", "no")
		st.w.WriteHeader(http.StatusOK)
		st.started = true
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if _, err := st.w.Write(b); err != nil {
		st.broken = true
		return
	}
	if err := st.rc.Flush(); err != nil {
		st.broken = true
	}
}

// onEvent turns the Manager's live events into lines.
func (st *ndjsonStream) onEvent(ev session.Event) {
	if ev.Stdout != "" {
		st.send(streamLine{Type: "stdout", Text: ev.Stdout})
	}
	if ev.Stderr != "" {
		st.send(streamLine{Type: "stderr", Text: ev.Stderr})
	}
	if ev.Result != nil {
		st.send(streamLine{Type: "result", Result: ev.Result})
	}
	if ev.Error != nil {
		st.send(streamLine{Type: "error", Error: ev.Error})
	}
}

// finish sends the last line and stops any late event from writing. If
// nothing was streamed yet and the call failed, it reports false and the
// caller answers with a plain problem instead.
func (s *Server) finishStream(st *ndjsonStream, w http.ResponseWriter, r *http.Request, result any, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err == nil {
		st.sendLocked(streamLine{Type: "done", Result: result})
		st.closed = true
		return
	}
	if !st.started {
		st.closed = true
		s.fail(w, r, err)
		return
	}
	if s.clientGone(r, err) {
		st.closed = true
		return
	}
	p, unexpected := problemFor(err)
	if unexpected {
		s.log.ErrorContext(r.Context(), "streamed request failed",
			slog.String("requestId", requestID(r.Context())), slog.String("error", err.Error()))
	}
	p.RequestID = requestID(r.Context())
	p.Instance = r.URL.Path
	if info := infoFrom(r.Context()); info != nil {
		info.problemType = p.Type
	}
	st.sendLocked(streamLine{Type: "error", Problem: p})
	st.closed = true
}
