package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// SessionIDHeader is the streamable HTTP transport's session header.
const SessionIDHeader = "Mcp-Session-Id"

// HTTPHandler serves MCP's streamable HTTP transport, stateless: every POST
// is a session of its own, so any instance of the API (any Lambda) can
// answer any request, and nothing of an MCP session lives in memory. What
// carries over between calls is the sessionbox session the request is
// bound to (see SessionFor).
type HTTPHandler struct {
	sdk *mcp.StreamableHTTPHandler
}

// binding is what Serve puts in a request's context for the tools: the
// transport hands the request's context on to tool calls.
type binding struct {
	backend   Backend
	sessionID string
	request   context.Context
}

type bindingKey struct{}

// NewHTTPHandler returns a streamable HTTP handler whose tools use opts.
func NewHTTPHandler(opts Options) *HTTPHandler {
	opts = opts.withDefaults()
	// One server serves every request; each call finds its backend and
	// session in its context, so a request builds no server.
	server := newServer(func(ctx context.Context) (context.Context, context.CancelFunc, Backend, string) {
		b, _ := ctx.Value(bindingKey{}).(binding)
		if b.backend == nil {
			return ctx, func() {}, unbound{}, ""
		}
		// The transport does not end a call whose client hung up; the
		// request's own context does.
		ctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(b.request, cancel)
		return ctx, func() { stop(); cancel() }, b.backend, b.sessionID
	}, opts)
	h := &HTTPHandler{}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              opts.Logger,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		// Authentication and the caller's identity are checked before the
		// request gets here, and API Gateway's Host is never loopback.
		DisableLocalhostProtection: true,
	})
	return h
}

// Serve answers one MCP request of a caller whose sessions b reaches, with
// tools bound to the sessionbox session sessionID.
func (h *HTTPHandler) Serve(w http.ResponseWriter, r *http.Request, b Backend, sessionID string) {
	ctx := context.WithValue(r.Context(), bindingKey{}, binding{backend: b, sessionID: sessionID, request: r.Context()})
	h.sdk.ServeHTTP(w, r.WithContext(ctx))
}

// SessionFor decides which sessionbox session an MCP request is bound to:
// the one named by ?session= when given (so an agent can share the sandbox
// of a chat's frontend), else one named for the MCP session: the request's
// Mcp-Session-Id, or a new id, which is then set on the response so the
// client sends it back. Both must be valid session ids; the error names
// what was wrong. Ids are per principal, so a client naming another's
// session only ever reaches its own.
func SessionFor(w http.ResponseWriter, r *http.Request) (string, error) {
	if name := r.URL.Query().Get("session"); name != "" || r.URL.Query().Has("session") {
		if err := session.ValidateSessionID(name); err != nil {
			return "", session.Errorf(session.ErrInvalid, "query parameter session: %s", detailOf(err))
		}
		return name, nil
	}
	id := r.Header.Get(SessionIDHeader)
	if id == "" {
		id = NewSessionID()
	} else if err := session.ValidateSessionID(id); err != nil {
		return "", session.Errorf(session.ErrInvalid, "header %s: %s", SessionIDHeader, detailOf(err))
	}
	w.Header().Set(SessionIDHeader, id)
	return id, nil
}

func detailOf(err error) string {
	if se, ok := err.(*session.Error); ok {
		return se.Detail
	}
	return err.Error()
}

// NewSessionID names a fresh MCP session: mcp- and 128 random bits, which
// make it unguessable, though ids are per principal anyway.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}

// errUnbound reports a tool call whose request context lost its binding,
// which the transport's handing on of contexts rules out; it fails the
// call rather than act on no one's session.
var errUnbound = errors.New("tool call without a bound session")

// unbound is the backend of a call without a binding: every call fails.
type unbound struct{}

func (unbound) Execute(context.Context, string, session.ExecRequest, func(session.Event)) (*session.ExecResult, error) {
	return nil, errUnbound
}

func (unbound) Install(context.Context, string, session.InstallRequest) (*session.InstallResult, error) {
	return nil, errUnbound
}
func (unbound) Reset(context.Context, string) error { return errUnbound }
func (unbound) ListFiles(context.Context, string, string, int) ([]session.FileEntry, error) {
	return nil, errUnbound
}

func (unbound) OpenFile(context.Context, string, string) (io.ReadCloser, int64, error) {
	return nil, 0, errUnbound
}

func (unbound) WriteFile(context.Context, string, string, []byte) (session.FileEntry, error) {
	return session.FileEntry{}, errUnbound
}

func (unbound) DeleteFile(context.Context, string, string) error { return errUnbound }

func (unbound) UploadURLs(context.Context, string, []string, string) (*session.URLUploadResult, error) {
	return nil, errUnbound
}

func (unbound) RunCommand(context.Context, string, session.CommandRequest, func(session.Event)) (*session.CommandResult, error) {
	return nil, errUnbound
}

func (unbound) StartCommand(context.Context, string, session.CommandRequest) (*session.CommandStarted, error) {
	return nil, errUnbound
}

func (unbound) ReadCommand(context.Context, string, string, time.Duration) (*session.CommandOutput, error) {
	return nil, errUnbound
}

func (unbound) KillCommand(context.Context, string, string) error { return errUnbound }
