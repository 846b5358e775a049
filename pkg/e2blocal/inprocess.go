//go:build linux

package e2blocal

import (
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

// SandboxTransport returns a RoundTripper for a client in this process
// (local mode's E2B client): requests to SandboxURL are answered by calling
// the routing proxy's handler directly, with no connection, so an envd or
// interpreter call costs no loopback TCP round trip, no connection
// goroutines and no socket syscalls. The proxy's checks (routing, traffic
// tokens, the disk floor) apply exactly as on the port, which other clients
// (the official SDKs) keep using. Every other request goes to next.
func (rt *Runtime) SandboxTransport(next http.RoundTripper) http.RoundTripper {
	return &handlerTransport{
		host:   rt.sbLn.Addr().String(),
		h:      rt.proxy,
		srv:    rt.sbSrv,
		log:    rt.log,
		next:   next,
		closed: func() bool { return rt.ctx.Err() != nil },
	}
}

// errRuntimeClosed answers requests sent after Close, as the closed port
// would refuse them.
var errRuntimeClosed = fmt.Errorf("e2blocal: the runtime is closed: %w", net.ErrClosed)

// handlerTransport serves the requests for one host (http only) with a
// handler in this process, streaming as a connection would: RoundTrip
// returns once the handler has written its headers (or flushed, or
// written a byte, or returned); the body then carries each write as the
// handler makes it. A client that cancels its context, or closes the body
// before its end, cancels the handler's context and fails the handler's
// further writes, as a hang-up does on a connection; a handler that
// panics after its headers cuts the body short (io.ErrUnexpectedEOF).
// Request bodies are read by the handler straight from the caller, so
// both directions may run at once (full duplex).
type handlerTransport struct {
	host string
	h    http.Handler
	// srv is the server the handler's context names (http.ServerContextKey),
	// as on the port: httputil.ReverseProxy cuts a response short only
	// under a server.
	srv    *http.Server
	log    *slog.Logger
	next   http.RoundTripper
	closed func() bool
}

func (t *handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != t.host || r.URL.Scheme != "http" {
		return t.next.RoundTrip(r)
	}
	if err := t.refuse(r); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	return t.serve(r)
}

// refuse says why r cannot be sent, nil when it can.
func (t *handlerTransport) refuse(r *http.Request) error {
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
