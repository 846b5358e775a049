//go:build linux

package e2blocal

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
)

// Routing headers the SDKs send on every envd and interpreter request.
const (
	hdrSandboxID   = "E2b-Sandbox-Id"
	hdrSandboxPort = "E2b-Sandbox-Port"
)

// pathPrefix routes by path: /_sandboxes/<id>/<port>/<rest> reaches <rest>
// on that port of that sandbox. It is this runtime's own convention (E2B's
// proxy has none) for URLs used without routing headers on the single
// sandbox URL, i.e. the client's signed file URLs. Neither envd nor the
// code interpreter serve anything under it.
const pathPrefix = "/_sandboxes/"

// route finds the target sandbox and port: the headers first, else a
// "<port>-<id>.<domain>" host, as E2B's own proxy does.
func route(r *http.Request) (id, port string) {
	id, port = r.Header.Get(hdrSandboxID), r.Header.Get(hdrSandboxPort)
	if id != "" {
		return id, port
	}
	host := r.Host
	if i := strings.IndexByte(host, '.'); i > 0 {
		label := host[:i]
		if p, rest, ok := strings.Cut(label, "-"); ok {
			if _, err := strconv.Atoi(p); err == nil {
				// Newer hosts carry a client suffix: <port>-<id>-<client>.
				id, _, _ = strings.Cut(rest, "-")
				return id, p
			}
		}
	}
	return "", ""
}

func (rt *Runtime) proxyHandler() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "sandbox"
			pr.Out.Host = "sandbox"
		},
		// Streams (process output, NDJSON executions) must reach the client
		// as they are produced.
		FlushInterval: -1,
		Transport:     sandboxTransport{rt},
		BufferPool:    &copyBuffers{},
		// A sandbox that refuses a request with a body (e.g. an upload over
		// the size limit) stops reading it; the server then closes the
		// connection, which the client may already be reusing for its next
		// request. Saying so up front keeps clients from reusing it.
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= http.StatusBadRequest && resp.Request.ContentLength != 0 {
				resp.Header.Set("Connection", "close")
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, _ error) {
			if r.Context().Err() != nil {
				return // the client went away; nobody to answer
			}
			id, _ := route(r)
			proxyNotFound(w, id)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := rt.admitRequest(w, r)
		if !ok {
			return
		}
		// By default an HTTP/1 server stops the request body once response
		// headers are flushed; a proxy still copying the request body then
		// fails and drops the stream (seen with fast envd replies).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sandboxKey{}, s)))
	})
}

// admitRequest routes r to its sandbox and applies the proxy's checks (a known,
// running sandbox, resumed if it auto-resumes; a private sandbox's traffic
// token; the disk floor for uploads), answering w itself when r may not
// pass. A request that passes is ready for the sandbox's servers: a path
// route's prefix stripped from its URL, the traffic token removed from its
// headers, the routing headers set.
func (rt *Runtime) admitRequest(w http.ResponseWriter, r *http.Request) (*sandbox, bool) {
	id, port := route(r)
	if pid, pport, rest, ok := pathRoute(r.URL.EscapedPath()); ok && (id == "" || id == pid) {
		id, port = pid, pport
		stripPath(r.URL, rest)
	}
	if id == "" {
		if sig, op, ok := signedFileRequest(r); ok {
			s, limited := rt.signedTarget(r, sig, op)
			switch {
			case limited:
				signedUnauthorized(w, http.StatusTooManyRequests, "too many signed file requests without a sandbox id; retry shortly or send E2b-Sandbox-Id")
				return nil, false
			case s == nil:
				signedUnauthorized(w, http.StatusUnauthorized, "the signature matches no sandbox's access token")
				return nil, false
			}
			id, port = s.id, envdPort
		}
	}
	s := rt.lookup(id)
	if s == nil || !rt.ensureRunning(r.Context(), s) {
		proxyNotFound(w, id)
		return nil, false
	}
	if !trafficAllowed(s, port, r) {
		writeError(w, http.StatusForbidden, "Sandbox is secured with traffic access token. Token header '%s' is missing or wrong", trafficTokenHeader)
		return nil, false
	}
	r.Header.Del(trafficTokenHeader) // the sandbox's servers never see it
	s.defuseForkBomb(r.Context())
	if port == envdPort && r.Method == http.MethodPost && r.URL.Path == "/files" && rt.refuseLowSpace(w) {
		return nil, false
	}
	r.Header.Set(hdrSandboxID, id)
	if port != "" {
		r.Header.Set(hdrSandboxPort, port)
	}
	return s, true
}

// trafficTokenHeader carries a private sandbox's traffic access token.
const trafficTokenHeader = "E2B-Traffic-Access-Token"

// trafficAllowed applies E2B's rule for sandbox URLs: public unless the
// sandbox was created with network.allowPublicTraffic false, and then only
// for requests with its traffic token. envd is exempt, as in E2B (the SDKs
// never send the header there): it checks the envd access token, or a file
// URL's signature, itself. A sandbox's own web servers are reachable by
// anyone who knows its id unless it is private, exactly as on E2B; the
// local runtime lists ids only to holders of its control API key.
func trafficAllowed(s *sandbox, port string, r *http.Request) bool {
	if s.trafficToken == "" || port == "" || port == agent.EnvdPort {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(r.Header.Get(trafficTokenHeader)), []byte(s.trafficToken)) == 1
}

// pathRoute splits an escaped path of the form /_sandboxes/<id>/<port>[/rest]
// into the target and the path to forward (escaped, "/" at least).
func pathRoute(escaped string) (id, port, rest string, ok bool) {
	var err error
	tail, found := strings.CutPrefix(escaped, pathPrefix)
	if !found {
		return "", "", "", false
	}
	rawID, tail, found := strings.Cut(tail, "/")
	if !found {
		return "", "", "", false
	}
	if id, err = url.PathUnescape(rawID); err != nil || id == "" {
		return "", "", "", false
	}
	port, rest, _ = strings.Cut(tail, "/")
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || port[0] == '+' {
		return "", "", "", false
	}
	return id, port, "/" + rest, true
}

// stripPath points u at the escaped path rest.
func stripPath(u *url.URL, rest string) {
	path, err := url.PathUnescape(rest)
	if err != nil {
		path = rest // unreachable: rest comes from a path the server parsed
	}
	u.Path, u.RawPath = path, rest
}

// ensureRunning reports whether s can take traffic, resuming it first when
// it is paused with autoResume.
func (rt *Runtime) ensureRunning(ctx context.Context, s *sandbox) bool {
	st, _ := s.snapshot()
	switch st {
	case stateRunning:
		return true
	case statePaused:
		if !s.autoResume {
			return false
		}
		// Like E2B, an auto-resumed sandbox gets its creation timeout again.
		_, err := s.resume(s.timeout)
		return err == nil
	}
	return false
}

type sandboxKey struct{}

// sandboxTransport sends each request over its sandbox's unix socket.
type sandboxTransport struct{ rt *Runtime }

func (t sandboxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s := r.Context().Value(sandboxKey{}).(*sandbox)
	return s.transport.RoundTrip(r)
}

// copyBuffers recycles the proxy's 32 KiB copy buffers, otherwise one per
// proxied request.
type copyBuffers struct{ pool sync.Pool }

func (c *copyBuffers) Get() []byte {
	if b, ok := c.pool.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 32<<10)
}

func (c *copyBuffers) Put(b []byte) { c.pool.Put(&b) }
