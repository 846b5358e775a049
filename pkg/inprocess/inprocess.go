// Package inprocess answers HTTP requests by calling a handler in the same
// process: no connection, no goroutines, no socket syscalls. It suits
// handlers whose answers are small and whole (the local DynamoDB emulator,
// the local runtime's control API); the response is recorded before it is
// returned, so nothing streams.
package inprocess

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
)

// Transport is an http.RoundTripper that serves every request with Handler.
type Transport struct {
	Handler http.Handler
}

// RoundTrip calls the handler with a shallow copy of r as a server would
// hand it over (RequestURI and RemoteAddr set, a body never nil) and
// returns what it wrote. The copy shares r's headers: handlers only read
// them, and a deep copy was most of a small call's garbage. A handler that
// panics fails the call, as a server closing the connection would.
func (t Transport) RoundTrip(r *http.Request) (resp *http.Response, err error) {
	if err := r.Context().Err(); err != nil {
		closeBody(r)
		return nil, err
	}
	in := new(http.Request)
	*in = *r
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = in.URL.RequestURI()
	in.RemoteAddr = "in-process"
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("inprocess: the handler for %s %s panicked: %v: %w", r.Method, r.URL.Path, p, io.ErrUnexpectedEOF)
		}
		closeBody(r)
	}()
	t.Handler.ServeHTTP(rec, in)
	resp = rec.Result()
	resp.Request = r
	return resp, nil
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}
