package store_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// fault is an answer the proxy gives instead of forwarding.
type fault struct {
	status int
	code   string // DynamoDB error type
}

// faultProxy forwards to a DynamoDB endpoint until told to fail; then it
// answers every request with a DynamoDB-shaped error, as the service does
// when overloaded or broken.
type faultProxy struct {
	url     string
	current atomic.Pointer[fault]
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target %q: %v", target, err)
	}
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.current.Load(); f != nil {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(f.status)
			fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected"}`, f.code)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *faultProxy) set(f *fault) { p.current.Store(f) }

func (p *faultProxy) fail(on bool) {
	if on {
		p.set(&fault{status: http.StatusInternalServerError, code: "InternalServerError"})
		return
	}
	p.set(nil)
}
