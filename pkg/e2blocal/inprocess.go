//go:build linux

package e2blocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// Transport returns a RoundTripper for clients in this process (local
// mode's E2B client) that reaches the runtime with no connection to its
// ports. A request to SandboxURL passes the routing proxy's checks
// (routing, traffic tokens, the disk floor) and then goes straight to its
// sandbox's servers over the sandbox's socket, as the proxy would send it,
// without the proxy's own HTTP round trip: no loopback TCP, no connection
// goroutines, no socket syscalls on this side. A request to APIURL is
// served by the control API's handler in process. Other clients (the
// official SDKs) keep using the ports. Every other request goes to next.
func (rt *Runtime) Transport(next http.RoundTripper) http.RoundTripper {
	api := &handlerTransport{h: rt.api, srv: rt.apiSrv, log: rt.log}
	return &inProcessTransport{
		hosts: map[string]func(*http.Request) (*http.Response, error){
			rt.sbLn.Addr().String():  rt.forward,
			rt.apiLn.Addr().String(): api.serve,
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
	var refusal recorder
	s, ok := rt.admitRequest(&refusal, out)
	if !ok {
		closeBody(r)
		return refusal.response(r), nil
	}
	out.URL.Scheme, out.URL.Host, out.Host = "http", "sandbox", "sandbox"
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		if cerr := r.Context().Err(); cerr != nil {
			return nil, cerr
		}
		proxyNotFound(&refusal, s.id)
		return refusal.response(r), nil
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

// recorder keeps a short answer written by the proxy's checks.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *recorder) response(r *http.Request) *http.Response {
	w.WriteHeader(http.StatusOK)
	return &http.Response{
		Status:     strconv.Itoa(w.code) + " " + http.StatusText(w.code),
		StatusCode: w.code,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        w.Header(),
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       r,
	}
}

// handlerTransport serves requests with a handler in this process,
// streaming as a connection would: serve returns once the handler has
// written its headers (or flushed, or written a byte, or returned); the
// body then carries each write as the handler makes it. A client that
// cancels its context, or closes the body before its end, cancels the
// handler's context and fails the handler's further writes, as a hang-up
// does on a connection; a handler that panics after its headers cuts the
// body short (io.ErrUnexpectedEOF). Request bodies are read by the
// handler straight from the caller, so both directions may run at once
// (full duplex).
type handlerTransport struct {
	h http.Handler
	// srv is the server the handler's context names (http.ServerContextKey),
	// as on the port: httputil.ReverseProxy, for one, cuts a response short
	// only under a server.
	srv *http.Server
	log *slog.Logger
}

// serve runs the handler for r in a goroutine and answers at its headers.
func (t *handlerTransport) serve(r *http.Request) (*http.Response, error) {
	clientCtx := r.Context()
	ctx, cancel := context.WithCancel(context.WithValue(clientCtx, http.ServerContextKey, t.srv))
	in := serverRequest(ctx, r)
	pr, pw := io.Pipe()
	// A client that gives up fails the handler's writes at once, read or
	// not; Read below reports the client's own error, not the pipe's.
	stop := context.AfterFunc(clientCtx, func() { pr.CloseWithError(clientCtx.Err()) })
	body := &pipeBody{pr: pr, ctx: clientCtx, stop: stop, cancel: cancel}
	w := &pipeWriter{req: r, header: http.Header{}, pw: pw, body: body, log: t.log, head: make(chan struct{})}
	go func() {
		defer cancel()
		defer func() { _ = in.Body.Close() }()
		defer w.finish()
		t.h.ServeHTTP(w, in)
	}()
	select {
	case <-w.head:
	case <-clientCtx.Done():
		// The handler sees the same end through its context.
		return nil, clientCtx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.resp, nil
}

// errClientClosed is what a handler's write gets once the client closed
// the body.
var errClientClosed = errors.New("e2blocal: the client closed the response body")

// serverRequest is r as a server hands it to a handler: a copy the handler
// may change, its URL only the path and query, its body never nil and of
// unknown length (-1) when the client did not say.
func serverRequest(ctx context.Context, r *http.Request) *http.Request {
	in := r.Clone(ctx)
	in.URL = &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	if in.Host == "" {
		in.Host = r.URL.Host
	}
	in.RemoteAddr = "in-process"
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	in.Close = false
	switch {
	case r.Body == nil || r.Body == http.NoBody:
		in.Body, in.ContentLength = http.NoBody, 0
	default:
		in.Body = &onceCloser{ReadCloser: r.Body}
		if in.ContentLength == 0 {
			in.ContentLength = -1
		}
	}
	return in
}

// onceCloser closes the caller's request body once, whoever closes it
// first (the handler, a transport it forwards to, or the end of the
// handler).
type onceCloser struct {
	io.ReadCloser
	once sync.Once
	err  error
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.ReadCloser.Close() })
	return c.err
}

// pipeBody is a response body fed by the handler's writes.
type pipeBody struct {
	pr     *io.PipeReader
	ctx    context.Context // the client's
	stop   func() bool     // unregisters the client context's watch
	cancel func()          // ends the handler's context
	once   sync.Once
}

func (b *pipeBody) Read(p []byte) (int, error) {
	n, err := b.pr.Read(p)
	if err != nil && err != io.EOF {
		if cerr := b.ctx.Err(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// Close before the end hangs up: the handler's context ends and its
// writes fail.
func (b *pipeBody) Close() error {
	b.once.Do(func() {
		b.stop()
		b.pr.CloseWithError(errClientClosed)
		b.cancel()
	})
	return nil
}

// pipeWriter is the handler's ResponseWriter.
type pipeWriter struct {
	req    *http.Request // the client's
	header http.Header
	pw     *io.PipeWriter
	body   *pipeBody
	log    *slog.Logger

	wrote    bool
	noBody   bool // HEAD, 204, 304: writes are not sent
	trailers []string
	resp     *http.Response
	err      error         // why there is no response; set before head closes
	head     chan struct{} // closed once resp or err is set
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		return // informational: nothing to pass on here
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	w.wrote = true
	h := w.header.Clone()
	w.noBody = w.req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
	resp := &http.Response{
		Status:     strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode: code,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        h,
		Body:          w.body,
		ContentLength: -1,
		Request:       w.req,
	}
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	if w.noBody {
		// Nobody reads the pipe: the handler's writes are dropped.
		resp.Body, resp.ContentLength = http.NoBody, 0
		w.body.stop()
	}
	for _, v := range h.Values("Trailer") {
		for k := range strings.SplitSeq(v, ",") {
			if k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k != "" {
				w.trailers = append(w.trailers, k)
			}
		}
	}
	if len(w.trailers) > 0 {
		resp.Trailer = http.Header{}
		for _, k := range w.trailers {
			resp.Trailer[k] = nil
		}
	}
	w.resp = resp
	close(w.head)
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		if _, typed := w.header["Content-Type"]; !typed && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	return w.pw.Write(p)
}

// FlushError sends the headers if they are not sent yet; every write
// reaches the client as it is made, so there is nothing else to flush.
func (w *pipeWriter) FlushError() error {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return nil
}

// Flush is FlushError for handlers that want an http.Flusher.
func (w *pipeWriter) Flush() { _ = w.FlushError() }

// EnableFullDuplex succeeds: the request body is the caller's own.
func (w *pipeWriter) EnableFullDuplex() error { return nil }

// finish ends the response when the handler returns or panics.
func (w *pipeWriter) finish() {
	v := recover()
	if v == nil {
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
		w.setTrailers()
		// A client that gave up before the end gets its error, not a
		// clean end, even when the handler ended because of it.
		_ = w.pw.CloseWithError(w.req.Context().Err())
		return
	}
	// As a server does: the connection is cut, so the client sees no
	// response, or the body ends early.
	err := io.ErrUnexpectedEOF
	if v != http.ErrAbortHandler {
		w.log.Error("e2blocal: in-process handler panic", "url", w.req.URL.String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		err = fmt.Errorf("e2blocal: in-process handler panic: %v: %w", v, io.ErrUnexpectedEOF)
	}
	if !w.wrote {
		w.wrote = true
		w.err = err
		close(w.head)
	}
	_ = w.pw.CloseWithError(err)
}

// setTrailers fills the declared trailers, and those set with
// http.TrailerPrefix, before the body's end makes them readable.
func (w *pipeWriter) setTrailers() {
	if w.resp == nil || w.noBody {
		return
	}
	for _, k := range w.trailers {
		if v, ok := w.header[k]; ok {
			w.resp.Trailer[k] = v
		}
	}
	for k, v := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if w.resp.Trailer == nil {
				w.resp.Trailer = http.Header{}
			}
			w.resp.Trailer[http.CanonicalHeaderKey(name)] = v
		}
	}
}
