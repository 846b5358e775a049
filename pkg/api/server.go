package api

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Default limits on request bodies.
const (
	defaultJSONBodyBytes   = 1 << 20 // 1 MiB: JSON bodies, code included
	defaultInlineFileBytes = session.DefaultMaxInlineFileBytes
	defaultExecTimeout     = 5 * time.Minute
	// responseSlack is what an execute or install may take beyond its own
	// time limit: starting or resuming the sandbox, collecting artifacts.
	responseSlack = 5 * time.Minute
)

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	mgr           Manager
	log           *slog.Logger
	identity      IdentityFunc
	keys          *keyCache
	requestID     func(*http.Request) string
	corsPolicy    corsPolicy
	maxJSONBytes  int64
	maxInlineFile int64
	execTimeout   time.Duration
	// keepAliveFirst and keepAliveEvery time keepalive lines of streams.
	keepAliveFirst, keepAliveEvery time.Duration
	// startHold bounds how long the start of a long response waits for its
	// call to reach the sandbox (heldTicking).
	startHold time.Duration
	// commandAttach bounds one reattachment to a command's output.
	commandAttach time.Duration

	// storage, when set, is checked before routes that grow the disk.
	storage func() error
	// limiter, when set, counts authenticated requests per principal.
	limiter session.RateLimiter
	// clock is the time the key cache and the limiter go by.
	clock session.Clock

	// mcpT, when set, serves /v1/mcp (WithMCP).
	mcpT MCPTransport

	mux     *http.ServeMux
	routes  []route
	handler http.Handler
}

// Option configures a Server.
type Option func(*Server)

// WithStorageCheck refuses requests that may start a sandbox or store an
// upload with 507 while check fails; its error is the problem's detail.
func WithStorageCheck(check func() error) Option { return func(s *Server) { s.storage = check } }

// WithLogger sets the logger for access logs and errors.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithIdentity replaces API-key authentication: f takes tenant and
// principal from the request, e.g. from API Gateway's authorizer context.
func WithIdentity(f IdentityFunc) Option { return func(s *Server) { s.identity = f } }

// WithRequestID names requests that arrive without a valid X-Request-Id,
// e.g. with API Gateway's request id, so our logs and the gateway's meet.
// When f returns an invalid id, a random one is used.
func WithRequestID(f func(*http.Request) string) Option { return func(s *Server) { s.requestID = f } }

// WithKeyCache remembers keys that authenticated for ttl, as API Gateway's
// authorizer cache does in front of the Lambda functions: a known key costs
// no store read, and a revoked one stops working within ttl.
func WithKeyCache(ttl time.Duration) Option { return func(s *Server) { s.keys = newKeyCache(ttl) } }

// WithClock sets the clock the key cache and the rate limiter go by (the
// system's by default), so tests move time instead of waiting for it.
func WithClock(c session.Clock) Option { return func(s *Server) { s.clock = c } }

// WithAllowedOrigins restricts CORS to these origins. Without it (or with
// "*") any origin may call the API, without credentials: see cors.go.
func WithAllowedOrigins(origins ...string) Option {
	return func(s *Server) { s.corsPolicy = newCORSPolicy(origins) }
}

// WithInlineFileLimit sets the largest body PUT files/content accepts; it
// should equal the Manager's MaxInlineFileBytes.
func WithInlineFileLimit(n int64) Option { return func(s *Server) { s.maxInlineFile = n } }

// WithJSONBodyLimit sets the largest JSON request body.
func WithJSONBodyLimit(n int64) Option { return func(s *Server) { s.maxJSONBytes = n } }

// New builds the API over mgr.
func New(mgr Manager, opts ...Option) *Server {
	s := &Server{
		mgr:           mgr,
		log:           slog.Default(),
		clock:         session.SystemClock{},
		corsPolicy:    newCORSPolicy(nil),
		maxJSONBytes:  defaultJSONBodyBytes,
		maxInlineFile: defaultInlineFileBytes,
		execTimeout:   defaultExecTimeout,
		mux:           http.NewServeMux(),

		keepAliveFirst: keepAliveFirst,
		keepAliveEvery: keepAliveEvery,
		startHold:      startHoldMax,
		commandAttach:  maxCommandAttach,
	}
	// Limits are the Manager's; options may still override them.
	if c, ok := mgr.(interface{ Config() session.Config }); ok {
		cfg := c.Config()
		if cfg.MaxInlineFileBytes > 0 {
			s.maxInlineFile = cfg.MaxInlineFileBytes
		}
		if cfg.ExecTimeout > 0 {
			s.execTimeout = cfg.ExecTimeout
		}
	}
	for _, o := range opts {
		o(s)
	}
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	s.handler = s.observe(s.cors(http.HandlerFunc(s.dispatch)))
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// dispatch answers what the mux would answer in text/plain (unknown
// routes, wrong methods) with problems instead.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if p := requestIDProblem(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	methods := s.allowed(r)
	switch {
	case len(methods) == 0:
		writeProblem(w, r, newProblem(kindNotFound, "no route matches "+r.URL.Path))
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", strings.Join(methods, ", "))
		w.WriteHeader(http.StatusNoContent)
	default:
		p := newProblem(kindMethod, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(methods, ", "))
		p.allow = strings.Join(methods, ", ")
		writeProblem(w, r, p)
	}
}

// allowed lists the methods with a route for r's path.
func (s *Server) allowed(r *http.Request) []string {
	var methods []string
	seen := map[string]bool{}
	for _, rt := range s.routes {
		if seen[rt.method] {
			continue
		}
		probe := &http.Request{Method: rt.method, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); strings.HasPrefix(pattern, rt.method+" ") {
			seen[rt.method] = true
			methods = append(methods, rt.method)
		}
	}
	return methods
}

// wrap runs a route's handler after authenticating the caller, unless the
// route is public.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := infoFrom(r.Context()); info != nil {
			info.route = rt.method + " " + rt.path
		}
		var id identity
		if !rt.public {
			var ok bool
			if id, ok = s.authenticate(w, r); !ok || !s.admit(w, r, id) {
				return
			}
		}
		if rt.grows && s.storage != nil {
			if err := s.storage(); err != nil {
				writeProblem(w, r, newProblem(kindStorage, err.Error()))
				return
			}
		}
		rt.handle(s, w, r, id)
	})
}

// allowLongResponse lets an execute or install outlive the server's write
// timeout, which is sized for ordinary requests: the execution's own time
// limit bounds it instead. Writers without deadlines are left alone.
func (s *Server) allowLongResponse(w http.ResponseWriter, timeoutSecs int) {
	d := s.execTimeout
	if timeoutSecs > 0 {
		d = time.Duration(timeoutSecs) * time.Second
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + responseSlack))
}
