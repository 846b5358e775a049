package urlfetch

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// MaxRedirects is how many redirects a fetch follows.
const MaxRedirects = 5

// maxHeaderBytes bounds a response's headers: a file server needs few.
const maxHeaderBytes = 64 << 10

// Options configure a Fetcher. The zero value is the production setting:
// public addresses only, the system resolver and roots.
type Options struct {
	// AllowPrivate lets fetches reach loopback, private, link-local, shared
	// and unique-local addresses: for tests and private deployments.
	AllowPrivate bool
	// Resolver resolves host names; nil is the system resolver. Whatever
	// it answers, the address dialed is checked.
	Resolver *net.Resolver
	// TLS, when set, configures HTTPS (tests trust their own CA with it).
	TLS *tls.Config
	// ConnectTimeout bounds one connection attempt, TLS handshake
	// included (default 10s).
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for a response's headers once the
	// request is sent (default 30s).
	HeaderTimeout time.Duration
	// MaxConnsPerHost caps connections to one host (default 8), so a list
	// of URLs on one server does not open a connection per URL at once.
	MaxConnsPerHost int
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = 30 * time.Second
	}
	if o.MaxConnsPerHost == 0 {
		o.MaxConnsPerHost = 8
	}
	return o
}

// errTooManyRedirects and errScheme end a redirect chain.
var (
	errTooManyRedirects = fmt.Errorf("more than %d redirects", MaxRedirects)
	errScheme           = errors.New("redirect to a scheme other than http or https")
)

// newClient is an HTTP client whose every connection, redirects included,
// goes through the guard. It takes no proxy from the environment: a proxy
// would dial on our behalf, out of the guard's sight.
func newClient(o Options) *http.Client {
	guard := Guard{AllowPrivate: o.AllowPrivate}
	dialer := &net.Dialer{
		Timeout:  o.ConnectTimeout,
		Resolver: o.Resolver,
		Control:  guard.Control,
	}
	tr := &http.Transport{
		Proxy:       nil,
		DialContext: dialer.DialContext,
		// net/http adds its protocols to the config it is given: a copy,
		// so fetchers built from one Options never share it.
		TLSClientConfig:        o.TLS.Clone(),
		TLSHandshakeTimeout:    o.ConnectTimeout,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		MaxConnsPerHost:        o.MaxConnsPerHost,
		MaxIdleConnsPerHost:    o.MaxConnsPerHost,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      true,
		// A body is stored as sent: a gzip-encoded file stays gzip.
		DisableCompression: true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return errTooManyRedirects
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errScheme
			}
			return nil
		},
	}
}
