package api

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

const contentTypeNDJSON = "application/x-ndjson"

// streamLine is one NDJSON line of a streamed execute or install:
//
//	{"type":"start"}                          first line: the call reached its sandbox
//	{"type":"stdout","text":"..."}            output as it happens
//	{"type":"stderr","text":"..."}
//	{"type":"result","result":{...}}          a rich result (execute)
//	{"type":"error","error":{name,value,traceback}}  the code raised
//	{"type":"keepalive"}                      nothing new; the call still runs
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
// starts with the start line, sent as soon as the call reaches its sandbox
// so a client (a browser's fetch resolves at the first byte) knows it runs;
// a call that fails before that still gets its proper status and problem.
type ndjsonStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	closed  bool
	broken  bool
	last    time.Time // when the last line went out
}

// Keepalive timing: a silent call starts its stream after keepAliveFirst
// and then sends a keepalive line whenever keepAliveEvery passes without
// one. Gateways cut streams that stay silent (API Gateway: 5 minutes idle)
// or send nothing for too long at first.
const (
	keepAliveFirst = 10 * time.Second
	keepAliveEvery = 30 * time.Second
)

// keepAlive sends keepalive lines while the call is silent, until the
// returned stop is called; stop waits for the sender to be gone.
func (st *ndjsonStream) keepAlive(first, every time.Duration) (stop func()) {
	return ticking(first, every, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.started || time.Since(st.last) >= every {
			st.sendLocked(streamLine{Type: "keepalive"})
		}
	})
}

// ticking calls tick after first, then every interval after that, until
// the returned stop is called; stop waits for a running tick to finish.
func ticking(first, every time.Duration, tick func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(first)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			tick()
			t.Reset(every)
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
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
	st.last = time.Now()
}

// onEvent turns the Manager's live events into lines.
func (st *ndjsonStream) onEvent(ev session.Event) {
	if ev.Started {
		st.mu.Lock()
		if !st.started {
			st.sendLocked(streamLine{Type: "start"})
		}
		st.mu.Unlock()
	}
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

// stream runs call with live output to the client and ends the stream with
// its result or its failure. A failure before any line went out is answered
// as a plain problem with its own status.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, call func(onEvent func(session.Event)) (any, error)) {
	st := newNDJSONStream(w)
	stop := st.keepAlive(s.keepAliveFirst, s.keepAliveEvery)
	result, err := call(st.onEvent)
	stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	// Events that arrive after this point must not write.
	defer func() { st.closed = true }()
	switch {
	case err == nil:
		st.sendLocked(streamLine{Type: "done", Result: result})
	case !st.started:
		s.fail(w, r, err)
	case !s.clientGone(r, err):
		st.sendLocked(streamLine{Type: "error", Problem: s.streamProblem(r, err)})
	}
}

// streamProblem is the problem of a failure reported inside a stream.
func (s *Server) streamProblem(r *http.Request, err error) *Problem {
	p, unexpected := problemOf(r, err)
	if unexpected {
		s.log.ErrorContext(r.Context(), "streamed request failed",
			slog.String("requestId", requestID(r.Context())), slog.String("error", err.Error()))
	}
	p.RequestID = requestID(r.Context())
	p.Instance = r.URL.Path
	if info := infoFrom(r.Context()); info != nil {
		info.problemType = p.Type
	}
	return p
}

// longJSON answers a JSON-mode execute or install. A call that ends within
// keepAliveFirst is answered as any other request: its status, then its
// JSON. A longer one starts a 200 response then and sends a space whenever
// keepAliveEvery passes, which JSON allows before a value, so a gateway
// that cuts silent streams (API Gateway: 5 minutes idle) keeps it open. A
// failure after the start can no longer change the status: the body is
// then its Problem object (with "type" and "status"), not the result.
func (s *Server) longJSON(w http.ResponseWriter, r *http.Request, call func() (any, error)) {
	// started is the ticker's until stop returns, and the answer's after.
	started := false
	rc := http.NewResponseController(w)
	stop := ticking(s.keepAliveFirst, s.keepAliveEvery, func() {
		if !started {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		_, _ = w.Write([]byte(" "))
		_ = rc.Flush()
	})
	res, err := call()
	stop()
	switch {
	case !started && err != nil:
		s.fail(w, r, err)
	case !started:
		writeJSON(w, http.StatusOK, res)
	case err != nil && !s.clientGone(r, err):
		_ = json.NewEncoder(w).Encode(s.streamProblem(r, err))
	case err == nil:
		_ = json.NewEncoder(w).Encode(res)
	}
}
