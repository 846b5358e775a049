package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"
)

// requestInfo travels in a request's context so handlers can add what the
// access log line says about them (identity, a code hash) without the log
// ever seeing secrets or bodies.
type requestInfo struct {
	requestID   string
	route       string
	tenant      string
	principal   string
	problemType string
	attrs       []slog.Attr
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

func requestID(ctx context.Context) string {
	if info := infoFrom(ctx); info != nil {
		return info.requestID
	}
	return ""
}

// logAttrs adds attributes to the request's access log line.
func logAttrs(ctx context.Context, attrs ...slog.Attr) {
	if info := infoFrom(ctx); info != nil {
		info.attrs = append(info.attrs, attrs...)
	}
}

// validRequestID bounds what a client may put in our logs through
// X-Request-Id.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a fixed id
		// keeps the request going rather than failing it for a log field.
		return "unknown"
	}
	return hex.EncodeToString(b[:])
}

// statusWriter records what was sent, for the access log and to know
// whether a panic can still be answered with a problem.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming working for code that type-asserts http.Flusher.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// observe wraps next with request ids, panic recovery and an access log.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := s.pickRequestID(r)
		info := &requestInfo{requestID: id}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		w.Header().Set("X-Request-Id", id)
		// Every answer is JSON, NDJSON or bytes of a user's file: none may
		// be sniffed into something a browser would run.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		sw := &statusWriter{ResponseWriter: w}
		defer s.accessLog(r, sw, info, start)
		defer s.recoverPanic(sw, r)
		next.ServeHTTP(sw, r)
	})
}

// requestIDProblem refuses an X-Request-Id outside the documented form
// rather than logging the request under an id its client never sees. It
// runs inside the CORS layer so a browser can read the answer, which
// carries an id the service chose.
func requestIDProblem(r *http.Request) *Problem {
	sent := r.Header.Get("X-Request-Id")
	if sent == "" || validRequestID.MatchString(sent) {
		return nil
	}
	return newProblem(kindInvalid, "header X-Request-Id must be 1-128 characters of A-Z a-z 0-9 . _ : -, not "+
		strconv.Quote(truncateForDetail(sent)))
}

// truncateForDetail keeps a problem's detail short whatever was sent.
func truncateForDetail(v string) string {
	const max = 64
	if len(v) <= max {
		return v
	}
	return v[:max] + "..."
}

// pickRequestID takes the client's id, else the platform's, else a new one.
func (s *Server) pickRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); validRequestID.MatchString(id) {
		return id
	}
	if s.requestID != nil {
		if id := s.requestID(r); validRequestID.MatchString(id) {
			return id
		}
	}
	return newRequestID()
}

func (s *Server) recoverPanic(w *statusWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.ErrorContext(r.Context(), "handler panic",
		slog.String("requestId", requestID(r.Context())),
		slog.String("panic", fmt.Sprint(v)),
		slog.String("stack", string(debug.Stack())))
	if w.status != 0 {
		// Part of a response is out; cutting the connection is the only
		// honest signal left.
		panic(http.ErrAbortHandler)
	}
	writeProblem(w, r, newProblem(kindInternal, "an internal error occurred; quote the request id when reporting it"))
}

func (s *Server) accessLog(r *http.Request, w *statusWriter, info *requestInfo, start time.Time) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	attrs := []slog.Attr{
		slog.String("requestId", info.requestID),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("route", info.route),
		slog.Int("status", status),
		slog.Int64("bytes", w.bytes),
		slog.Int64("durationMs", time.Since(start).Milliseconds()),
	}
	if info.tenant != "" {
		attrs = append(attrs, slog.String("tenant", info.tenant), slog.String("principal", info.principal))
	}
	if info.problemType != "" {
		attrs = append(attrs, slog.String("problem", info.problemType))
	}
	attrs = append(attrs, info.attrs...)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}
