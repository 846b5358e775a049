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

// streamLine is one NDJSON line of a streamed execute or install. Each
// type has one shape, so a client (or a generated type) tells them apart by
// "type" alone:
//
//	{"type":"start"}                          first line: the call reached its sandbox
//	{"type":"stdout","text":"..."}            output as it happens
//	{"type":"stderr","text":"..."}
//	{"type":"result","result":{...}}          a rich result (execute)
//	{"type":"error","error":{name,value,traceback}}  the code raised
//	{"type":"keepalive"}                      nothing new; the call still runs
//	{"type":"done","summary":{...}}           last line: the outcome, without the output already streamed
//	{"type":"failure","problem":{...}}        last line: the call failed
type streamLine struct {
	Type    string             `json:"type"`
	Text    string             `json:"text,omitempty"`
	Result  *session.Result    `json:"result,omitempty"`
	Error   *session.ExecError `json:"error,omitempty"`
	Summary any                `json:"summary,omitempty"`
	Problem *Problem           `json:"problem,omitempty"`
}

// Stream line types.
const (
	lineStart     = "start"
	lineStdout    = "stdout"
	lineStderr    = "stderr"
	lineResult    = "result"
	lineError     = "error"
	lineKeepalive = "keepalive"
	lineDone      = "done"
	lineFailure   = "failure"
)

// streamOutcome is a finished call as a stream ends it: the output the
// lines must have carried, and the summary the done line carries.
type streamOutcome struct {
	stdout, stderr string
	results        []session.Result
	err            *session.ExecError
	summary        any
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

// acceptsStream reports whether the client can take an NDJSON stream (or,
// when the call fails before it starts, a problem).
func acceptsStream(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "*/*", "application/*", contentTypeNDJSON, contentTypeProblem:
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
	// What went out, so the end sends only what the lines lacked.
	stdout, stderr strings.Builder
	results        int
	errSent        bool
}

// Keepalive timing: a silent call starts its stream after keepAliveFirst
// and then sends a keepalive line whenever keepAliveEvery passes without
// one. Gateways cut streams that stay silent (API Gateway: 5 minutes idle)
// or send nothing for too long at first. A call that is still starting its
// sandbox then is held until it reaches the sandbox, startHoldMax at most
// (heldTicking).
const (
	keepAliveFirst = 10 * time.Second
	keepAliveEvery = 30 * time.Second
	// startHoldMax is how long a response's start may wait for its call to
	// reach the sandbox: well within API Gateway's 29 s integration timeout.
	startHoldMax = 25 * time.Second
)

// keepAlive sends keepalive lines while the call is silent, until the
// returned stop is called; stop waits for the sender to be gone. reached
// is to be called once the call reached its sandbox.
func (st *ndjsonStream) keepAlive(first, every, hold time.Duration) (reached, stop func()) {
	return heldTicking(first, every, hold, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.started || time.Since(st.last) >= every {
			st.sendLocked(streamLine{Type: lineKeepalive})
		}
	})
}

// ticking calls tick after first, then every interval after that, until
// the returned stop is called; stop waits for a running tick to finish. A
// timer's function rather than a goroutine of its own: most calls end
// before the first tick, and then cost no goroutine at all.
func ticking(first, every time.Duration, tick func()) (stop func()) {
	_, stop = heldTicking(first, every, 0, tick)
	return stop
}

// heldTicking is ticking for a call that may first have to start a
// sandbox. Its first tick starts the response (status 200), after which a
// failure can no longer have a status of its own; so when first passes
// before reached is called (the call reached its sandbox), that tick waits
// for reached, or for hold (counted from the call's start) at the latest.
// A start that fails or is refused meanwhile (an overloaded host's 503 or
// 429 with Retry-After) is answered with its own status. hold <= first
// holds nothing.
func heldTicking(first, every, hold time.Duration, tick func()) (reached, stop func()) {
	h := &heldTicker{every: every, rest: hold - first, tick: tick}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.scheduleLocked(first)
	return h.reach, h.stop
}

// heldTicker is heldTicking's state. Each timer carries the generation it
// was set in, so one that fires after being replaced does nothing.
type heldTicker struct {
	mu      sync.Mutex
	t       *time.Timer
	gen     int
	every   time.Duration
	rest    time.Duration // what is left of the hold once first passed
	tick    func()
	reached bool // the call reached its sandbox
	waiting bool // first passed, the tick waits for reached
	stopped bool
}

func (h *heldTicker) scheduleLocked(d time.Duration) {
	h.gen++
	gen := h.gen
	h.t = time.AfterFunc(d, func() { h.fire(gen) })
}

func (h *heldTicker) fire(gen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || gen != h.gen {
		return
	}
	if !h.reached && !h.waiting && h.rest > 0 {
		h.waiting = true
		h.scheduleLocked(h.rest)
		return
	}
	h.tickLocked()
}

func (h *heldTicker) tickLocked() {
	h.reached, h.waiting = true, false
	h.tick()
	h.scheduleLocked(h.every)
}

func (h *heldTicker) reach() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.reached {
		return
	}
	if h.waiting {
		// The first tick is overdue: the response starts now.
		h.t.Stop()
		h.tickLocked()
		return
	}
	h.reached = true
}

func (h *heldTicker) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.t.Stop()
}

func newNDJSONStream(w http.ResponseWriter) *ndjsonStream {
	return &ndjsonStream{w: w, rc: http.NewResponseController(w)}
}

// sendOutputLocked sends a line of output and notes what it carried.
func (st *ndjsonStream) sendOutputLocked(line streamLine) {
	switch line.Type {
	case lineStdout:
		st.stdout.WriteString(line.Text)
	case lineStderr:
		st.stderr.WriteString(line.Text)
	case lineResult:
		st.results++
	case lineError:
		st.errSent = true
	}
	st.sendLocked(line)
}

// finishLocked sends what the outcome holds beyond what the lines carried
// (a provider may report output only with its result), then the done line
// with the summary: a client that joins the lines has the whole result.
func (st *ndjsonStream) finishLocked(out streamOutcome) {
	if rest, ok := strings.CutPrefix(out.stdout, st.stdout.String()); ok && rest != "" {
		st.sendOutputLocked(streamLine{Type: lineStdout, Text: rest})
	}
	if rest, ok := strings.CutPrefix(out.stderr, st.stderr.String()); ok && rest != "" {
		st.sendOutputLocked(streamLine{Type: lineStderr, Text: rest})
	}
	for i := st.results; i < len(out.results); i++ {
		st.sendOutputLocked(streamLine{Type: lineResult, Result: &out.results[i]})
	}
	if out.err != nil && !st.errSent {
		st.sendOutputLocked(streamLine{Type: lineError, Error: out.err})
	}
	st.sendLocked(streamLine{Type: lineDone, Summary: out.summary})
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
	st.mu.Lock()
	defer st.mu.Unlock()
	if ev.Started && !st.started {
		st.sendLocked(streamLine{Type: lineStart})
	}
	if ev.Stdout != "" {
		st.sendOutputLocked(streamLine{Type: lineStdout, Text: ev.Stdout})
	}
	if ev.Stderr != "" {
		st.sendOutputLocked(streamLine{Type: lineStderr, Text: ev.Stderr})
	}
	if ev.Result != nil {
		st.sendOutputLocked(streamLine{Type: lineResult, Result: ev.Result})
	}
	if ev.Error != nil {
		st.sendOutputLocked(streamLine{Type: lineError, Error: ev.Error})
	}
}

// stream runs call with live output to the client and ends the stream with
// its result or its failure. A failure before any line went out is answered
// as a plain problem with its own status.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, call func(onEvent func(session.Event)) (streamOutcome, error)) {
	st := newNDJSONStream(w)
	reached, stop := st.keepAlive(s.keepAliveFirst, s.keepAliveEvery, s.startHold)
	// Deferred too: after a panic in call, which the server recovers from,
	// no keepalive may write to the finished response.
	defer stop()
	outcome, err := call(func(ev session.Event) {
		st.onEvent(ev)
		if ev.Started {
			reached()
		}
	})
	stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	// Events that arrive after this point must not write.
	defer func() { st.closed = true }()
	switch {
	case err == nil:
		st.finishLocked(outcome)
	case !st.started:
		s.fail(w, r, err)
	case !s.clientGone(r, err):
		st.sendLocked(streamLine{Type: lineFailure, Problem: s.streamProblem(r, err)})
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
// JSON. A longer one starts a 200 response then, or once it reached its
// sandbox (an Event with Started) if starting that took longer (startHold
// at most), and sends a space whenever keepAliveEvery passes, which JSON
// allows before a value, so a gateway that cuts silent streams (API
// Gateway: 5 minutes idle) keeps it open. A failure after the start can no
// longer change the status: the body is then its Problem object (with
// "type" and "status"), not the result. call passes onEvent to the
// Manager, which reports reaching the sandbox through it.
func (s *Server) longJSON(w http.ResponseWriter, r *http.Request, call func(onEvent func(session.Event)) (any, error)) {
	// started is the ticker's until stop returns, and the answer's after.
	started := false
	rc := http.NewResponseController(w)
	reached, stop := heldTicking(s.keepAliveFirst, s.keepAliveEvery, s.startHold, func() {
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
	// Deferred too: after a panic in call, which the server recovers from,
	// no tick may write to the finished response.
	defer stop()
	res, err := call(func(ev session.Event) {
		if ev.Started {
			reached()
		}
	})
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
