package api

import (
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/mcpserver"
)

// mcpBodyBytes bounds one MCP message: a write_file of a whole inline file
// arrives base64-encoded inside JSON-RPC.
const mcpBodyBytes = 8 << 20

// mcp serves the MCP streamable HTTP transport over the caller's own
// sessions: the same Manager, authentication and identity as every route.
// The request's shape is checked here so bad input gets a problem, as
// everywhere else; JSON-RPC errors inside a well-formed request are MCP's.
func (s *Server) mcp(w http.ResponseWriter, r *http.Request, id identity) {
	if p := mcpShape(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	if len(r.Header.Values("Accept")) == 0 {
		// No Accept takes any type (RFC 9110); the transport wants it said.
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	sessionID, err := mcpserver.SessionFor(w, r)
	if err != nil {
		writeProblem(w, r, newProblem(kindInvalid, domainDetail(err)))
		return
	}
	logAttrs(r.Context(), slog.String("sessionId", sessionID))
	s.allowLongResponse(w, 0)
	r.Body = http.MaxBytesReader(w, r.Body, mcpBodyBytes)
	pw := &mcpProblemWriter{ResponseWriter: w, r: r}
	s.mcpHandler.Serve(pw, r, mcpserver.ManagerBackend{Manager: s.mgr, Tenant: id.tenant, Principal: id.principal}, sessionID)
	pw.finish()
}

// mcpProblemWriter turns the transport's plain-text refusals (a body that
// is not JSON-RPC, a message too large) into problems, so every 4xx of the
// API has one shape. JSON-RPC answers, whatever their status, pass as they
// are: they are MCP's own, and MCP clients read them.
type mcpProblemWriter struct {
	http.ResponseWriter
	r       *http.Request
	problem *Problem
}

func (w *mcpProblemWriter) WriteHeader(code int) {
	ct, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	if code < 400 || ct != "text/plain" || w.problem != nil {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.problem = newProblem(mcpProblemKind(code), "")
	w.problem.Status = code
	if code == http.StatusMethodNotAllowed {
		w.problem.allow = w.Header().Get("Allow")
	}
}

func (w *mcpProblemWriter) Write(b []byte) (int, error) {
	if w.problem == nil {
		return w.ResponseWriter.Write(b)
	}
	if len(w.problem.Detail) < 1024 {
		w.problem.Detail += string(b)
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController flush the event stream.
func (w *mcpProblemWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the problem held back, if any.
func (w *mcpProblemWriter) finish() {
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
	for _, k := range problemKinds {
		if k.status == code {
			return k
		}
	}
	if code < 500 {
		return kindInvalid
	}
	return kindInternal
}

// mcpShape checks what the streamable HTTP transport requires of a POST.
func mcpShape(r *http.Request) *Problem {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return newProblem(kindMediaType, "an MCP message must be application/json, not "+strconv.Quote(r.Header.Get("Content-Type")))
	}
	if len(r.Header.Values("Accept")) > 0 && !acceptsMCP(r.Header.Values("Accept")) {
		return newProblem(kindNotAccept, "an MCP client must accept both application/json and text/event-stream")
	}
	if r.ContentLength > mcpBodyBytes {
		return newProblem(kindTooLarge, "an MCP message is limited to "+strconv.Itoa(mcpBodyBytes)+" bytes")
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
