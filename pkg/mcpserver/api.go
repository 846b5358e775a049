package mcpserver

import (
	"context"
	"net/http"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// APITransport serves /v1/mcp inside pkg/api over the API's own Manager:
// it is the MCP transport pkg/api's WithMCP plugs in. It lives here, not in
// pkg/api, so that only the programs that serve MCP (the mcp Lambda and
// local serve) link the MCP SDK and its JSON-schema library; every other
// API function stays without them.
type APITransport struct {
	h       *HTTPHandler
	mgr     Manager
	maxBody int64
}

// NewAPITransport serves the tools from mgr. When opts leaves
// MaxOutputBytes unset and mgr reports its session.Config, the Manager's
// cap is the one results name.
func NewAPITransport(mgr Manager, opts Options) *APITransport {
	if c, ok := mgr.(interface{ Config() session.Config }); ok && opts.MaxOutputBytes == 0 {
		opts.MaxOutputBytes = c.Config().MaxOutputBytes
	}
	opts = opts.withDefaults()
	return &APITransport{h: NewHTTPHandler(opts), mgr: mgr, maxBody: opts.MaxRequestBytes}
}

// MaxRequestBytes bounds one MCP message.
func (t *APITransport) MaxRequestBytes() int64 { return t.maxBody }

// SessionFor is SessionFor: the MCP session the request names, or a new
// one, echoed in the response's Mcp-Session-Id header.
func (t *APITransport) SessionFor(w http.ResponseWriter, r *http.Request) (string, error) {
	return SessionFor(w, r)
}

// ServeMCP serves one message for the authenticated caller tenant and
// principal on sessionID. longCall runs once, at the first tool call that
// may run long (execute, install, a command, URL uploads): by then the
// transport has set its response headers, since a tool call reaches the
// backend only through the transport's channels, so a keepalive may read
// them.
func (t *APITransport) ServeMCP(w http.ResponseWriter, r *http.Request, tenant, principal, sessionID string, longCall func()) {
	b := &startSignal{Backend: ManagerBackend{Manager: t.mgr, Tenant: tenant, Principal: principal}, start: longCall}
	t.h.Serve(w, r, b, sessionID)
}

// startSignal runs start at the first call of a long tool.
type startSignal struct {
	Backend
	once  sync.Once
	start func()
}

func (b *startSignal) signal() {
	if b.start != nil {
		b.once.Do(b.start)
	}
}

// Execute signals, then executes.
func (b *startSignal) Execute(ctx context.Context, id string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	b.signal()
	return b.Backend.Execute(ctx, id, req, onEvent)
}

// Install signals, then installs.
func (b *startSignal) Install(ctx context.Context, id string, req session.InstallRequest) (*session.InstallResult, error) {
	b.signal()
	return b.Backend.Install(ctx, id, req)
}

// RunCommand signals, then runs the command.
func (b *startSignal) RunCommand(ctx context.Context, id string, req session.CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error) {
	b.signal()
	return b.Backend.RunCommand(ctx, id, req, onEvent)
}

// UploadURLs signals, then uploads.
func (b *startSignal) UploadURLs(ctx context.Context, id string, urls []string, destDir string) (*session.URLUploadResult, error) {
	b.signal()
	return b.Backend.UploadURLs(ctx, id, urls, destDir)
}
