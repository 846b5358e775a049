package e2b

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Version is the version of this client, sent in the User-Agent header.
const Version = "0.1.0"

const userAgent = "e2b-go-sdk/" + Version

// Client talks to the E2B control plane and to sandboxes. It is safe for
// concurrent use; create one per process and reuse it so connections are
// pooled. Call Close when done to release idle connections.
type Client struct {
	cfg       Config
	http      *http.Client
	transport *http.Transport // owned by the Client; nil when the caller supplied HTTPClient
	levels    apiLevels       // which create and connect endpoints the server has
}

// New builds a Client. Fields left zero in cfg take the defaults; New reads
// no environment variable (ConfigFromEnv does, when asked).
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if cfg.APIURL == "" {
		return nil, errors.New("e2b: no API URL")
	}
	c := &Client{cfg: cfg, http: cfg.HTTPClient}
	if c.http == nil {
		c.transport = newTransport()
		c.http = &http.Client{Transport: c.transport}
	}
	return c, nil
}

// newTransport is tuned for many concurrent long-lived streams to a few hosts
// (the API host and the sandbox proxy host).
func newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Config returns the effective configuration, defaults applied.
func (c *Client) Config() Config { return c.cfg }

// Close releases idle connections held by the Client's own transport. It does
// not interrupt calls in flight. A Client built on a caller-supplied
// HTTPClient leaves that client alone.
func (c *Client) Close() error {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
	return nil
}
