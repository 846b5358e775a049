//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/inprocess"
)

// Transport returns a RoundTripper for clients in this process (local
// mode's E2B client) that reaches the runtime with no connection to its
// ports. A request to SandboxURL passes the routing proxy's checks
// (routing, traffic tokens, the disk floor) and then goes straight to its
// sandbox's servers over the sandbox's socket, as the proxy would send it,
// without the proxy's own HTTP round trip: no loopback TCP, no connection
// goroutines, no socket syscalls on this side. A request to APIURL is
// served by the control API's handler in process (its answers are small
// JSON documents, recorded whole). Other clients (the
// official SDKs) keep using the ports. Every other request goes to next.
func (rt *Runtime) Transport(next http.RoundTripper) http.RoundTripper {
	api := inprocess.Transport{Handler: rt.api}
	return &inProcessTransport{
		hosts: map[string]func(*http.Request) (*http.Response, error){
			rt.sbLn.Addr().String():  rt.forward,
			rt.apiLn.Addr().String(): api.RoundTrip,
		},
		next:   next,
		closed: func() bool { return rt.ctx.Err() != nil },
	}
}

// inProcessTransport sends requests for its hosts (http only) to their
// functions, the rest to next.
type inProcessTransport struct {
	hosts  map[string]func(*http.Request) (*http.Response, error)
	next   http.RoundTripper
	closed func() bool
}

func (t *inProcessTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	serve, ok := t.hosts[r.URL.Host]
	if !ok || r.URL.Scheme != "http" {
		return t.next.RoundTrip(r)
	}
	if err := t.refuse(r); err != nil {
		closeBody(r)
		return nil, err
	}
	return serve(r)
}

// errRuntimeClosed answers requests sent after Close, as the closed ports
// would refuse them.
var errRuntimeClosed = fmt.Errorf("e2blocal: the runtime is closed: %w", net.ErrClosed)

// refuse says why r cannot be sent, nil when it can.
func (t *inProcessTransport) refuse(r *http.Request) error {
	if err := r.Context().Err(); err != nil {
		return err
	}
	if t.closed() {
		return errRuntimeClosed
	}
	if r.Header.Get("Upgrade") != "" {
		return errors.New("e2blocal: protocol upgrades are not served in process")
	}
	return nil
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// forward sends r to its sandbox's servers as the routing proxy does:
// admitted by the same checks (a refusal is the proxy's answer), with the
// same routing headers, a sandbox that fails before answering a 502 as
// the proxy's, and a response cut short ending in io.ErrUnexpectedEOF as
// it does through the proxy.
func (rt *Runtime) forward(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	if out.Host == "" {
		out.Host = r.URL.Host
	}
	removeHopHeaders(out.Header)
	// As httputil.ReverseProxy with Rewrite: no forwarding headers from
	// the client.
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		delete(out.Header, k)
	}
	refusal := httptest.NewRecorder()
	s, ok := rt.admitRequest(refusal, out)
	if !ok {
		closeBody(r)
		return refusalResponse(refusal, r), nil
	}
	out.URL.Scheme, out.URL.Host, out.Host = "http", "sandbox", "sandbox"
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		if cerr := r.Context().Err(); cerr != nil {
			return nil, cerr
		}
		proxyNotFound(refusal, s.id)
		return refusalResponse(refusal, r), nil
	}
	removeHopHeaders(resp.Header)
	resp.Body = &forwardedBody{ReadCloser: resp.Body, ctx: r.Context()}
	resp.Request = r
	return resp, nil
}

// hopHeaders are the hop-by-hop headers a proxy does not pass on (RFC
// 9110, section 7.6.1), as httputil.ReverseProxy drops them.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// forwardedBody is a sandbox's response body: a read that fails before its
// end reports the client's own error when it gave up, else
// io.ErrUnexpectedEOF, which is what the proxy's client sees when the
// proxy cuts a response short.
type forwardedBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *forwardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return n, err
	}
	if cerr := b.ctx.Err(); cerr != nil {
		return n, cerr
	}
	return n, fmt.Errorf("e2blocal: the sandbox's response was cut short (%v): %w", err, io.ErrUnexpectedEOF)
}

// refusalResponse is the response the proxy's checks wrote, as to r.
func refusalResponse(rec *httptest.ResponseRecorder, r *http.Request) *http.Response {
	resp := rec.Result()
	resp.Request = r
	return resp
}
