//go:build linux

package e2blocal

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// inProcessClient is a client whose requests to http://sandbox.test are
// served by h in process; others go to next.
func inProcessClient(h http.Handler, next http.RoundTripper, closed func() bool) *http.Client {
	if closed == nil {
		closed = func() bool { return false }
	}
	ht := &handlerTransport{h: h, srv: &http.Server{}, log: slog.New(slog.DiscardHandler)}
	return &http.Client{Transport: &inProcessTransport{
		hosts: map[string]func(*http.Request) (*http.Response, error){"sandbox.test": ht.serve},
		next:  next, closed: closed,
	}}
}

// wait fails the test when ch does not close within a generous bound, so a
// broken transport fails instead of hanging the run.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

// A response streams: the client has the headers and each flushed write
// while the handler is still running.
func TestInProcessStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		<-release
		_, _ = io.WriteString(w, "second\n")
	})
	resp, err := inProcessClient(h, nil, nil).Get("http://sandbox.test/execute")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// The handler sees a request as a server makes it, and may change it
// without touching the caller's.
func TestInProcessServerRequest(t *testing.T) {
	t.Parallel()
	type seen struct {
		uri, host, remote, proto, body string
		length                         int64
		fullDuplex                     error
	}
	got := make(chan seen, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.RequestURI, r.Host, r.RemoteAddr, r.Proto, string(b), r.ContentLength,
			http.NewResponseController(w).EnableFullDuplex()}
		r.Header.Set("X-Changed", "yes")
		r.URL.Path = "/elsewhere"
	})
	c := inProcessClient(h, nil, nil)
	cases := []struct {
		name string
		body io.Reader
		want seen
	}{
		{"no body", nil, seen{uri: "/files?path=%2Fa+b", host: "sandbox.test", remote: "in-process", proto: "HTTP/1.1"}},
		{"known length", strings.NewReader("abc"), seen{uri: "/files?path=%2Fa+b", host: "sandbox.test", remote: "in-process", proto: "HTTP/1.1", body: "abc", length: 3}},
		{"unknown length", io.MultiReader(strings.NewReader("xy")), seen{uri: "/files?path=%2Fa+b", host: "sandbox.test", remote: "in-process", proto: "HTTP/1.1", body: "xy", length: -1}},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodPost, "http://sandbox.test/files?path=%2Fa+b", tc.body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_ = resp.Body.Close()
		if s := <-got; s != tc.want {
			t.Errorf("%s: handler saw %+v, want %+v", tc.name, s, tc.want)
		}
		if req.Header.Get("X-Changed") != "" || req.URL.Path != "/files" {
			t.Errorf("%s: the handler changed the caller's request: %v %s", tc.name, req.Header, req.URL)
		}
	}
}

// A client that cancels ends the handler's context, before the headers
// (RoundTrip fails) and after them (the body's read fails), with the
// client's own error.
func TestInProcessCancel(t *testing.T) {
	t.Parallel()
	for _, afterHeaders := range []bool{false, true} {
		ended := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if afterHeaders {
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
			}
			<-r.Context().Done()
			close(ended)
		})
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://sandbox.test/", nil)
		if !afterHeaders {
			time.AfterFunc(20*time.Millisecond, cancel)
			if _, err := inProcessClient(h, nil, nil).Do(req); !errors.Is(err, context.Canceled) {
				t.Fatalf("before the headers: got %v, want context.Canceled", err)
			}
			wait(t, ended, "the handler's context ending")
			continue
		}
		resp, err := inProcessClient(h, nil, nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(20*time.Millisecond, cancel)
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
			t.Fatalf("after the headers: read got %v, want context.Canceled", err)
		}
		_ = resp.Body.Close()
		wait(t, ended, "the handler's context ending")
	}
}

// Closing the body before its end hangs up: the handler's context ends
// and its writes fail.
func TestInProcessHangUp(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "x")
		<-r.Context().Done()
		_, err := io.WriteString(w, "after")
		writeErr <- err
	})
	resp, err := inProcessClient(h, nil, nil).Get("http://sandbox.test/")
	if err != nil {
		t.Fatal(err)
	}
	if b := make([]byte, 1); func() bool { _, err := io.ReadFull(resp.Body, b); return err != nil }() {
		t.Fatal("no first byte")
	}
	_ = resp.Body.Close()
	select {
	case err := <-writeErr:
		if err == nil {
			t.Fatal("a write after the hang-up succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never saw the hang-up")
	}
}

// Both directions run at once: the handler answers each line of the
// request body while the client is still sending it.
func TestInProcessFullDuplex(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			_, _ = io.WriteString(w, "echo "+sc.Text()+"\n")
			_ = rc.Flush()
		}
	})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, "http://sandbox.test/echo", pr)
	resp, err := inProcessClient(h, nil, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, word := range []string{"a", "b", "c"} {
		go func() { _, _ = io.WriteString(pw, word+"\n") }()
		if line, err := br.ReadString('\n'); err != nil || line != "echo "+word+"\n" {
			t.Fatalf("got %q, %v; want the echo of %q", line, err, word)
		}
	}
	_ = pw.Close()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the request's end: %q, %v", rest, err)
	}
}

// A handler that panics cuts the exchange as a server cuts the
// connection: no response before its headers, a body ending early after.
func TestInProcessPanic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		h     http.HandlerFunc
		trips bool // RoundTrip fails
	}{
		{"before headers", func(http.ResponseWriter, *http.Request) { panic("boom") }, true},
		{"abort before headers", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, true},
		{"after headers", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "partial")
			panic(http.ErrAbortHandler)
		}, false},
	}
	for _, tc := range cases {
		resp, err := inProcessClient(tc.h, nil, nil).Get("http://sandbox.test/")
		if tc.trips {
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: got %v, want an error wrapping io.ErrUnexpectedEOF", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(b) != "partial" || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: read %q, %v; want \"partial\" then io.ErrUnexpectedEOF", tc.name, b, err)
		}
	}
}

// A reverse proxy whose upstream dies mid-stream cuts the client's body
// short, as it does behind a server, rather than ending it cleanly.
func TestInProcessProxyCutsShort(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only part")
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		_ = conn.Close()
	}))
	t.Cleanup(upstream.Close)
	target, _ := url.Parse(upstream.URL)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	resp, err := inProcessClient(rp, nil, nil).Get("http://sandbox.test/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %q, %v; want io.ErrUnexpectedEOF", b, err)
	}
}

// Statuses without a body, HEAD, trailers, an implicit 200 and a sniffed
// type are answered as a server answers them.
func TestInProcessResponses(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
			panic("a write after 204 did not fail")
		}
	})
	mux.HandleFunc("/trailers", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
	})
	mux.HandleFunc("/silent", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/html", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html><body>") })
	c := inProcessClient(mux, nil, nil)

	resp, err := c.Get("http://sandbox.test/nocontent")
	if err != nil || resp.StatusCode != http.StatusNoContent || resp.Body != http.NoBody {
		t.Fatalf("204: %v %v", resp, err)
	}
	resp, err = c.Head("http://sandbox.test/html")
	if err != nil || resp.StatusCode != http.StatusOK || resp.Body != http.NoBody {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp, err = c.Get("http://sandbox.test/trailers")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Trailer["X-Sum"]; !ok {
		t.Errorf("trailer X-Sum not announced: %v", resp.Trailer)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "body" {
		t.Fatalf("trailers body %q, %v", b, err)
	}
	if resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "yes" {
		t.Errorf("trailers after the body: %v", resp.Trailer)
	}
	resp, err = c.Get("http://sandbox.test/silent")
	if b, _ := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK || len(b) != 0 {
		t.Fatalf("silent handler: %v %v %q", resp, err, b)
	}
	resp, err = c.Get("http://sandbox.test/html")
	if err != nil || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("sniffed type: %v %v", resp, err)
	}
	_ = resp.Body.Close()
}

// Requests for other hosts go to next; after the runtime closes, requests
// for its host are refused as its closed port would refuse them.
func TestInProcessRouting(t *testing.T) {
	t.Parallel()
	var inProcess, elsewhere atomic.Int32
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { inProcess.Add(1) })
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		elsewhere.Add(1)
		return &http.Response{StatusCode: http.StatusTeapot, Body: http.NoBody, Request: r}, nil
	})
	var closed atomic.Bool
	c := inProcessClient(h, next, closed.Load)
	for _, u := range []string{"http://sandbox.test/a", "http://api.test/b", "https://sandbox.test/c"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if inProcess.Load() != 1 || elsewhere.Load() != 2 {
		t.Fatalf("in process %d, elsewhere %d; want 1 and 2", inProcess.Load(), elsewhere.Load())
	}
	closed.Store(true)
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, "http://sandbox.test/a", body)
	if _, err := c.Do(req); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after close: %v, want net.ErrClosed", err)
	}
	if body.closed.Load() != 1 {
		t.Fatalf("the refused request's body was closed %d times, want 1", body.closed.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// BenchmarkSandboxTransport is a small POST answered by a handler: over
// loopback TCP (an httptest server) and in process.
func BenchmarkSandboxTransport(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"type":"result","text":"2"}`+"\n")
		http.NewResponseController(w).Flush()
		_, _ = io.WriteString(w, `{"type":"end_of_execution"}`+"\n")
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	clients := map[string]struct {
		c   *http.Client
		url string
	}{
		"tcp":        {srv.Client(), srv.URL},
		"in-process": {inProcessClient(h, nil, nil), "http://sandbox.test"},
	}
	for _, name := range []string{"tcp", "in-process"} {
		b.Run(name, func(b *testing.B) {
			c := clients[name]
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.c.Post(c.url+"/execute", "application/json", strings.NewReader(`{"code":"x + 1"}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
}
