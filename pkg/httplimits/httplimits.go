// Package httplimits bounds what one client can hold of an HTTP server:
// time to send its headers, time between the bytes of its body, header
// size, idle keep-alive time and the number of open connections, in all and
// per client address. A slow or stalled client is dropped; responses may
// still stream for as long as the handler writes, since no write deadline
// applies.
package httplimits

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/net/netutil"
)

// Limits are the bounds; the zero value of a field means its default.
type Limits struct {
	// ReadHeaderTimeout bounds the time to read a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyIdleTimeout bounds the wait for each read of a request body,
	// including the unread rest the server drains after a handler
	// returns: a client that stops sending mid-body is dropped.
	BodyIdleTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection waits for its
	// next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps request line and headers.
	MaxHeaderBytes int
	// MaxConns caps open connections; more wait in the listen backlog.
	MaxConns int
	// MaxConnsPerClient caps the open connections of one remote address
	// (default a quarter of MaxConns; negative: no cap). One past it is
	// answered 429 with Retry-After and closed, taking no slot of
	// MaxConns, so one client cannot hold every slot and keep everyone
	// else (health checks included) waiting in the backlog.
	MaxConnsPerClient int
}

// Defaults, high enough for real load on one machine.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyIdleTimeout   = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 4096
)

func (l Limits) withDefaults() Limits {
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.BodyIdleTimeout <= 0 {
		l.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = max(1, l.MaxConns/4)
	}
	return l
}

// Server returns a server for h with the limits applied.
func (l Limits) Server(h http.Handler) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           bodyDeadline(h, l.BodyIdleTimeout),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// Listener caps the connections ln hands out at MaxConns, and those of one
// remote address at MaxConnsPerClient; net/http's own plain-text answers to
// requests it cannot parse go out as problem+json (problemconn.go).
func (l Limits) Listener(ln net.Listener) net.Listener {
	l = l.withDefaults()
	ln = problemListener{ln}
	if l.MaxConnsPerClient > 0 {
		ln = newPerClient(ln, l.MaxConnsPerClient)
	}
	return netutil.LimitListener(ln, l.MaxConns)
}

// Serve serves h on ln with the limits until the server is shut down.
func (l Limits) Serve(ln net.Listener, h http.Handler) (*http.Server, <-chan error) {
	srv := l.Server(h)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l.Listener(ln)) }()
	return srv, done
}

// bodyDeadline gives each read of a request body idle to complete. The
// deadline is the connection's, so it also bounds the server's own drain
// of an unread body; it is lifted once the body has been read to its end,
// so a long response is not cut.
func bodyDeadline(h http.Handler, idle time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(idle)); err != nil {
			// Not a connection this package can bound (a test recorder).
			h.ServeHTTP(w, r)
			return
		}
		r.Body = &idleBody{ReadCloser: r.Body, rc: rc, idle: idle}
		h.ServeHTTP(w, r)
	})
}

type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	done bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done:
	case errors.Is(err, io.EOF):
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err == nil:
		_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, ErrBodyTimeout
	}
	return n, err
}

// ErrBodyTimeout is what a body read returns when the client sent nothing
// for BodyIdleTimeout.
var ErrBodyTimeout = errors.New("the client sent no request body bytes within the idle timeout")
