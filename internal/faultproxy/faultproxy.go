// Package faultproxy is the reverse proxy tests put in front of a real
// service (a DynamoDB emulator, the E2B runtime's control API) to make it
// fail or stall on demand, as an outage would, while everything else about
// the service stays real. It is test support: no product code imports it.
package faultproxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what the proxy does instead of forwarding a request.
type Fault struct {
	// Status is answered instead of forwarding; 0 forwards (after Hang).
	Status int
	// Body and ContentType are the answer's; with no Body the answer is
	// {"code":Status,"message":"injected"} as JSON.
	Body, ContentType string
	// Hang holds each faulted request this long first, or until its
	// client gives up (then nothing is answered).
	Hang time.Duration
	// Match picks the requests the fault is for; nil picks all. The rest
	// are forwarded.
	Match func(*http.Request) bool
	// Pass forwards this many matching requests before the fault applies.
	Pass int
}

// armed is the fault in force, with the count of matches it let pass.
type armed struct {
	Fault
	matched atomic.Int64
}

// Proxy forwards to its target while no fault is set.
type Proxy struct {
	// URL is the proxy's address: point the client under test here.
	URL     string
	next    http.Handler
	current atomic.Pointer[armed]
}

// New starts a proxy to target, closed when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("fault proxy target %q: %v", target, err)
	}
	p := &Proxy{next: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Set puts f in force, replacing any fault before it.
func (p *Proxy) Set(f Fault) { p.current.Store(&armed{Fault: f}) }

// Heal ends the fault: every request is forwarded again.
func (p *Proxy) Heal() { p.current.Store(nil) }

// Failing returns a switch that puts f in force (on) or heals the proxy
// (off): the shape of the contract suites' Fail hooks.
func (p *Proxy) Failing(f Fault) func(on bool) {
	return func(on bool) {
		if on {
			p.Set(f)
			return
		}
		p.Heal()
	}
}

// ServeHTTP forwards r, or answers it as the fault in force says.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.current.Load()
	if f == nil || f.Match != nil && !f.Match(r) || f.matched.Add(1) <= int64(f.Pass) {
		p.next.ServeHTTP(w, r)
		return
	}
	if f.Hang > 0 {
		select {
		case <-time.After(f.Hang):
		case <-r.Context().Done():
			return
		}
	}
	if f.Status == 0 {
		p.next.ServeHTTP(w, r)
		return
	}
	body, ctype := f.Body, f.ContentType
	if body == "" {
		body, ctype = fmt.Sprintf(`{"code":%d,"message":"injected"}`, f.Status), "application/json"
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(body))
}

// DynamoDBError is a fault answering as DynamoDB does, with its error type
// code (e.g. "ThrottlingException") and status.
func DynamoDBError(status int, code string) Fault {
	return Fault{Status: status, ContentType: "application/x-amz-json-1.0",
		Body: fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected"}`, code)}
}

// DynamoDBOp matches the DynamoDB calls of one operation (e.g. "PutItem").
func DynamoDBOp(op string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.Header.Get("X-Amz-Target"), "."+op) }
}
