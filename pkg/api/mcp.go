package api

import (
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/problem"
)

// MCPTransport serves the Model Context Protocol's streamable HTTP
// transport at /v1/mcp. pkg/mcpserver's APITransport is the one in use; the
// API takes it as an option so that the programs that do not serve MCP (all
// Lambda functions but mcp) link neither it nor the MCP SDK.
type MCPTransport interface {
	// MaxRequestBytes bounds one MCP message.
	MaxRequestBytes() int64
	// SessionFor names the request's MCP session (a new one when it names
	// none) and echoes it in the response; its errors are session.Errors.
	SessionFor(w http.ResponseWriter, r *http.Request) (string, error)
	// ServeMCP serves one message for the authenticated tenant and
	// principal. longCall runs once, at the first tool call that may run
	// long, when the transport's response headers are set.
	ServeMCP(w http.ResponseWriter, r *http.Request, tenant, principal, sessionID string, longCall func())
}

// WithMCP serves /v1/mcp with t over the caller's sessions. Without it the
// route answers 404: API Gateway sends it to the mcp function only.
func WithMCP(t MCPTransport) Option { return func(s *Server) { s.mcpT = t } }

// mcp serves the MCP streamable HTTP transport over the caller's own
// sessions: the same Manager, authentication and identity as every route.
// The request's shape is checked here so bad input gets a problem, as
// everywhere else; JSON-RPC errors inside a well-formed request are MCP's.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request, id identity) {
	if s.mcpT == nil {
		writeProblem(w, r, newProblem(kindNotFound, "MCP is not served here"))
		return
	}
	limit := s.mcpT.MaxRequestBytes()
	if p := mcpShape(r, limit); p != nil {
		writeProblem(w, r, p)
		return
	}
	if len(r.Header.Values("Accept")) == 0 {
		// No Accept takes any type (RFC 9110); the transport wants it said.
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	sessionID, err := s.mcpT.SessionFor(w, r)
	if err != nil {
		writeProblem(w, r, newProblem(kindInvalid, domainDetail(err)))
		return
	}
	logAttrs(r.Context(), slog.String("sessionId", sessionID))
	s.allowLongResponse(w, 0)
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	mw := &mcpWriter{ResponseWriter: w, r: r}
	var k keepAlive
	s.mcpT.ServeMCP(mw, r, id.tenant, id.principal, sessionID, func() {
		k.start(func() func() { return ticking(s.keepAliveFirst, s.keepAliveEvery, mw.keepAlive) })
	})
	k.end()
	mw.finish()
}

// keepAlive holds the ticker a long tool call starts, so the handler stops
// it when the transport returns, and a call that starts after that starts
// nothing.
type keepAlive struct {
	mu   sync.Mutex
	stop func()
	done bool
}

func (k *keepAlive) start(begin func() (stop func())) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done && k.stop == nil {
		k.stop = begin()
	}
}

func (k *keepAlive) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.stop != nil {
		k.stop()
	}
}

// mcpWriter is the transport's response writer. It turns the transport's
// plain-text refusals (a body that is not JSON-RPC, a message too large)
// into problems, so every 4xx of the API has one shape; JSON-RPC answers,
// whatever their status, pass as they are: they are MCP's own. And it keeps
// a long tool call's event stream alive with SSE comments, which clients
// ignore, because API Gateway closes a stream silent for 5 minutes. Writes
// are serialized: the transport and the keepalive write from different
// goroutines.
type mcpWriter struct {
	http.ResponseWriter
	r *http.Request

	mu      sync.Mutex
	problem *Problem
	wrote   bool // the status is out
}

func (w *mcpWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *mcpWriter) writeHeaderLocked(code int) {
	if w.wrote || w.problem != nil {
		return
	}
	ct, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	if code < 400 || ct != "text/plain" {
		w.wrote = true
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.problem = newProblem(mcpProblemKind(code), "")
	w.problem.Status = code
	if code == http.StatusMethodNotAllowed {
		w.problem.allow = w.Header().Get("Allow")
	}
}

func (w *mcpWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wrote && w.problem == nil {
		w.writeHeaderLocked(http.StatusOK)
	}
	if w.problem != nil {
		if len(w.problem.Detail) < 1024 {
			w.problem.Detail += string(b)
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes under the lock, so http.ResponseController never
// flushes while the other goroutine writes.
func (w *mcpWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *mcpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// keepAlive sends an SSE comment on an event stream, starting the stream
// when the transport has not yet written anything.
func (w *mcpWriter) keepAlive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.problem != nil {
		return
	}
	if !w.wrote {
		if ct, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); ct != "text/event-stream" {
			return
		}
		w.wrote = true
		w.ResponseWriter.WriteHeader(http.StatusOK)
	}
	if _, err := io.WriteString(w.ResponseWriter, ": keepalive\n\n"); err == nil {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// finish writes the problem held back, if any.
func (w *mcpWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.problem
	if p == nil {
		return
	}
	p.Detail = strings.TrimSpace(p.Detail)
	if p.Status >= 500 || p.Detail == "" {
		p.Detail = "the MCP request could not be served; quote the request id when reporting it"
	}
	w.Header().Del("X-Content-Type-Options")
	writeProblem(w.ResponseWriter, w.r, p)
}

func mcpProblemKind(code int) problemKind {
	if k, ok := problem.ForStatus(code); ok {
		return k
	}
	if code < 500 {
		return kindInvalid
	}
	return kindInternal
}

// mcpShape checks what the streamable HTTP transport requires of a POST.
func mcpShape(r *http.Request, limit int64) *Problem {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return newProblem(kindMediaType, "an MCP message must be application/json, not "+strconv.Quote(r.Header.Get("Content-Type")))
	}
	if len(r.Header.Values("Accept")) > 0 && !acceptsMCP(r.Header.Values("Accept")) {
		return newProblem(kindNotAccept, "an MCP client must accept both application/json and text/event-stream")
	}
	if r.ContentLength > limit {
		return newProblem(kindTooLarge, "an MCP message is limited to "+strconv.FormatInt(limit, 10)+" bytes")
	}
	return nil
}

func acceptsMCP(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "*/*":
				jsonOK, streamOK = true, true
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}
