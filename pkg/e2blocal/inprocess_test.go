//go:build linux

package e2blocal

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/inprocess"
)

// inProcessClient is a client whose requests to http://sandbox.test are
// served by h in process; others go to next.
func inProcessClient(h http.Handler, next http.RoundTripper, closed func() bool) *http.Client {
	if closed == nil {
		closed = func() bool { return false }
	}
	return &http.Client{Transport: &inProcessTransport{
		hosts: map[string]func(*http.Request) (*http.Response, error){"sandbox.test": inprocess.Transport{Handler: h}.RoundTrip},
		next:  next, closed: closed,
	}}
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
