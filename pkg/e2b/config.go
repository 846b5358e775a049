package e2b

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Default values, matching the official SDKs.
const (
	DefaultDomain         = "e2b.app"
	DefaultRequestTimeout = 60 * time.Second
	// DefaultSandboxTimeout is the sandbox lifetime E2B applies when Create is given none.
	DefaultSandboxTimeout = 300 * time.Second
	// DefaultCommandTimeout bounds a command's lifetime when CommandOptions.Timeout is 0.
	DefaultCommandTimeout = 60 * time.Second
	// DefaultRunCodeTimeout bounds a code execution when RunCodeOptions.Timeout is 0.
	DefaultRunCodeTimeout = 60 * time.Second
	// DefaultInterruptGrace is how long past its timeout RunCode waits for
	// the interpreter to end an execution it was asked to interrupt; it
	// outlasts the local runtime's wait before it kills a kernel that
	// ignores the interrupt.
	DefaultInterruptGrace = 8 * time.Second

	// EnvdPort is the port of envd, the in-sandbox daemon for files and processes.
	EnvdPort = 49983
	// InterpreterPort is the port of the code-interpreter server.
	InterpreterPort = 49999

	debugSandboxID   = "debug_sandbox_id"
	debugEnvdVersion = "99.99.99"
	keepaliveSeconds = "50"
)

// Config configures a Client. Zero fields take the defaults; New reads no
// environment variable. A program that wants the official SDKs' variables
// (E2B_API_KEY, E2B_DOMAIN, E2B_API_URL, E2B_SANDBOX_URL, E2B_DEBUG) asks
// for them with ConfigFromEnv, so a variable left in a shell cannot change
// a client built from explicit settings.
type Config struct {
	// APIKey authenticates control-plane calls (X-API-Key). Env: E2B_API_KEY.
	APIKey string
	// Domain is the E2B domain, "e2b.app" by default. Env: E2B_DOMAIN.
	Domain string
	// APIURL overrides the control-plane base URL (default https://api.<domain>).
	// Env: E2B_API_URL.
	APIURL string
	// SandboxURL, when set, receives every envd and code-interpreter request;
	// the target sandbox and port travel in the E2b-Sandbox-Id and
	// E2b-Sandbox-Port headers. Env: E2B_SANDBOX_URL.
	//
	// Signed file URLs (Sandbox.DownloadURL, UploadURL) are used by parties
	// that send no headers, so they name the sandbox in the path instead:
	// <SandboxURL>/_sandboxes/<id>/49983/files?... This is a convention of
	// sessionbox's local runtime (pkg/e2blocal), which strips the prefix
	// before forwarding; E2B's own proxy does not know it, so with a real
	// E2B deployment behind SandboxURL such URLs do not work.
	SandboxURL string
	// Debug targets a single local envd on localhost:49983 and an interpreter
	// on localhost:49999, and skips the API for create, connect, kill, set
	// timeout and metrics. Env: E2B_DEBUG=true.
	Debug bool
	// RequestTimeout bounds each control-plane call and unary RPC, and the
	// wait for response headers of streaming calls. Default 60s; negative
	// means no timeout.
	RequestTimeout time.Duration
	// HTTPClient sends every request. When nil the Client builds one on a
	// private http.Transport with keep-alive and pools sized for many
	// concurrent sandboxes.
	HTTPClient *http.Client
	// Retry controls retries of idempotent calls.
	Retry RetryPolicy
	// Headers are added to control-plane requests (never to sandbox traffic).
	Headers http.Header
	// BinaryRPC makes envd RPCs use the protobuf binary codec instead of
	// JSON, which is what the official SDKs send.
	BinaryRPC bool
	// MaxOutputBytes bounds the output a command or code execution keeps in
	// memory: the first MaxOutputBytes bytes of each of a command's stdout
	// and stderr, and of an execution's logs and of its results; the rest is
	// dropped and CommandResult.Truncated / Execution.Truncated is set. Live
	// callbacks still see everything. Default DefaultMaxOutputBytes;
	// negative means no limit. CommandOptions, ConnectOptions and
	// RunCodeOptions can override it per call.
	MaxOutputBytes int
}

// Environment variables ConfigFromEnv reads, as the official SDKs name them.
const (
	EnvAPIKey     = "E2B_API_KEY"
	EnvDomain     = "E2B_DOMAIN"
	EnvAPIURL     = "E2B_API_URL"
	EnvSandboxURL = "E2B_SANDBOX_URL"
	EnvDebug      = "E2B_DEBUG"
)

// ConfigFromEnv is the configuration the official SDKs take from the
// environment: the E2B_* variables above, each optional. E2B_DEBUG is
// "true" or "false" in any case; another value is an error naming it.
func ConfigFromEnv() (Config, error) { return configFrom(os.Getenv) }

func configFrom(getenv func(string) string) (Config, error) {
	c := Config{APIKey: getenv(EnvAPIKey), Domain: getenv(EnvDomain), APIURL: getenv(EnvAPIURL), SandboxURL: getenv(EnvSandboxURL)}
	switch v := getenv(EnvDebug); strings.ToLower(strings.TrimSpace(v)) {
	case "", "false":
	case "true":
		c.Debug = true
	default:
		return Config{}, fmt.Errorf("e2b: %s=%q: want true or false", EnvDebug, v)
	}
	return c, nil
}

// RetryPolicy bounds retries of idempotent calls on 429, 502, 503, 504 and
// reset connections. Calls that start a command or run code are never
// retried; a create only on 429 (MaxRateLimitWait).
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts including the first;
	// default 3; 1 disables retries.
	MaxAttempts int
	// BaseDelay is the first backoff step (default 200ms); each retry doubles it
	// and a random jitter picks a delay between half and all of it.
	BaseDelay time.Duration
	// MaxDelay caps one backoff step (default 5s).
	MaxDelay time.Duration
	// MaxRateLimitWait bounds the total time Create waits on 429s before
	// it reports the last one (default 30s; negative: no retries). E2B
	// allows 1 create a second on its Base plan (5 on Pro), so a burst of
	// starts queues up here instead of failing.
	MaxRateLimitWait time.Duration
}

func (c Config) withDefaults() Config {
	if c.Domain == "" {
		c.Domain = DefaultDomain
	}
	if c.APIURL == "" {
		if c.Debug {
			c.APIURL = "http://localhost:3000"
		} else {
			c.APIURL = "https://api." + c.Domain
		}
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	c.SandboxURL = strings.TrimRight(c.SandboxURL, "/")
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Retry.MaxAttempts <= 0 {
		c.Retry.MaxAttempts = 3
	}
	if c.Retry.BaseDelay <= 0 {
		c.Retry.BaseDelay = 200 * time.Millisecond
	}
	if c.Retry.MaxDelay <= 0 {
		c.Retry.MaxDelay = 5 * time.Second
	}
	if c.Retry.MaxRateLimitWait == 0 {
		c.Retry.MaxRateLimitWait = 30 * time.Second
	}
	return c
}

// headerRoutedDomains are the E2B domains whose proxy accepts routing by
// header on https://sandbox.<domain>.
var headerRoutedDomains = map[string]bool{
	"e2b.app": true, "e2b.dev": true, "e2b.pro": true, "e2b-staging.dev": true,
}

// sandboxPathPrefix routes a request by its path on the local runtime's
// sandbox URL: /_sandboxes/<id>/<port>/<path>. Neither envd nor the code
// interpreter serve anything under it.
const sandboxPathPrefix = "/_sandboxes/"

// sandboxBaseURL is where requests for one port of one sandbox are sent.
// direct is for file URLs handed to third parties, which cannot add routing
// headers: it forbids the shared sandbox.<domain> host and puts the target
// in the path of a SandboxURL.
func (c *Config) sandboxBaseURL(id, domain string, port int, direct bool) string {
	switch {
	case c.SandboxURL != "" && direct:
		return c.SandboxURL + sandboxPathPrefix + url.PathEscape(id) + "/" + itoa(port)
	case c.SandboxURL != "":
		return c.SandboxURL
	case c.Debug:
		return "http://localhost:" + itoa(port)
	}
	if domain == "" {
		domain = c.Domain
	}
	if port == EnvdPort && !direct && headerRoutedDomains[domain] {
		return "https://sandbox." + domain
	}
	return "https://" + itoa(port) + "-" + id + "." + domain
}

// host is the public host of a port of a sandbox, for user services.
func (c *Config) host(id, domain string, port int) string {
	if c.Debug {
		return "localhost:" + itoa(port)
	}
	if domain == "" {
		domain = c.Domain
	}
	return itoa(port) + "-" + id + "." + domain
}
