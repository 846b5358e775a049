package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

// sandboxConn reaches one port (envd or interpreter) of one sandbox.
type sandboxConn struct {
	client *Client
	sb     *Sandbox
	port   int
	base   string
	http   *http.Client
	proc   processconnect.ProcessClient
	fs     filesystemconnect.FilesystemClient
}

func (c *Client) newSandboxConn(sb *Sandbox, port int) *sandboxConn {
	base := c.http.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := *c.http
	hc.Timeout = 0 // streams outlive any whole-request timeout; calls bound themselves
	hc.Transport = &sandboxTransport{base: base, sb: sb, port: strconv.Itoa(port)}
	sc := &sandboxConn{client: c, sb: sb, port: port,
		base: c.cfg.sandboxBaseURL(sb.ID, sb.Domain, port, false), http: &hc}
	if port == EnvdPort {
		opts := []connect.ClientOption{connect.WithInterceptors(&rpcInterceptor{c: c})}
		if !c.cfg.BinaryRPC {
			opts = append(opts, connect.WithProtoJSON())
		}
		sc.proc = processconnect.NewProcessClient(&hc, sc.base, opts...)
		sc.fs = filesystemconnect.NewFilesystemClient(&hc, sc.base, opts...)
	}
	return sc
}

// sandboxTransport adds the routing and access headers E2B's proxy and envd
// expect on every request, and turns the proxy's "sandbox not found" 502
// into ErrSandboxNotFound so that every caller (REST or RPC) sees it.
var envdPortString = strconv.Itoa(EnvdPort)

type sandboxTransport struct {
	base http.RoundTripper
	sb   *Sandbox
	port string
}

func (t *sandboxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("E2b-Sandbox-Id", t.sb.ID)
	r.Header.Set("E2b-Sandbox-Port", t.port)
	if r.Header.Get("User-Agent") == "" || strings.HasPrefix(r.Header.Get("User-Agent"), "connect-go") {
		r.Header.Set("User-Agent", userAgent)
	}
	if t.sb.accessToken != "" {
		r.Header.Set("X-Access-Token", t.sb.accessToken)
	}
	// envd takes its own access token and is exempt from the traffic
	// token; every other port of a private sandbox needs it.
	if t.sb.trafficToken != "" && t.port != envdPortString {
		r.Header.Set("E2B-Traffic-Access-Token", t.sb.trafficToken)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		return resp, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	var body struct {
		SandboxID string `json:"sandboxId"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(raw, &body) == nil && (body.SandboxID != "" || strings.Contains(body.Message, "sandbox was not found")) {
		return nil, sandboxGone("", t.sb.ID, http.StatusBadGateway, body.Message)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// request builds a REST request to this port.
func (sc *sandboxConn) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, method, sc.base+path, body)
}

// health is GET /health on envd: 2xx when the sandbox is up.
func (sc *sandboxConn) health(ctx context.Context) error {
	ctx, cancel := sc.client.requestContext(ctx)
	defer cancel()
	req, err := sc.request(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return err
	}
	resp, err := sc.http.Do(req)
	if err != nil {
		return wrapErr("sandbox.health", sc.sb.ID, err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode >= 300 {
		return envdError("sandbox.health", sc.sb.ID, resp)
	}
	return nil
}

// requestContext applies the configured request timeout.
func (c *Client) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.cfg.RequestTimeout > 0 {
		return context.WithTimeout(ctx, c.cfg.RequestTimeout)
	}
	return context.WithCancel(ctx)
}

// envdError maps an envd (or interpreter) REST error response.
func envdError(op, sandboxID string, resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Message string `json:"message"`
		Detail  any    `json:"detail"`
	}
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &body) == nil && body.Message != "" {
		msg = body.Message
	}
	kinds := kindsForStatus(resp.StatusCode)
	if resp.StatusCode == http.StatusForbidden {
		// envd answers a bad token with 401; its 403 is the file system's.
		kinds = []error{ErrPermissionDenied}
	}
	return &Error{Op: op, SandboxID: sandboxID, StatusCode: resp.StatusCode, Message: msg,
		kinds:      kinds,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// rpcInterceptor applies the request timeout to unary RPCs and retries the
// idempotent ones.
type rpcInterceptor struct{ c *Client }

// idempotentRPCs may be sent again after a transient failure.
var idempotentRPCs = map[string]bool{
	filesystemconnect.FilesystemStatProcedure:             true,
	filesystemconnect.FilesystemListDirProcedure:          true,
	filesystemconnect.FilesystemGetWatcherEventsProcedure: true,
	processconnect.ProcessListProcedure:                   true,
	processconnect.ProcessUpdateProcedure:                 true,
}

func (i *rpcInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		var res connect.AnyResponse
		err := i.c.withRetry(ctx, idempotentRPCs[req.Spec().Procedure], func(ctx context.Context) error {
			ctx, cancel := i.c.requestContext(ctx)
			defer cancel()
			var err error
			res, err = next(ctx, req)
			return rpcRetryInfo(err)
		})
		return res, err
	}
}

func (i *rpcInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *rpcInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// rpcRetryInfo classifies a connect error so withRetry can decide; the
// original error stays reachable through Unwrap.
func rpcRetryInfo(err error) error {
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	var gone *Error
	if errors.As(err, &gone) {
		return gone
	}
	if ce.Code() != connect.CodeUnavailable && ce.Code() != connect.CodeResourceExhausted {
		return err
	}
	e := wrapErr("", "", err).(*Error)
	e.RetryAfter = parseRetryAfter(ce.Meta().Get("Retry-After"), time.Now())
	return e
}

// basicUser builds envd's user-selection header.
func basicUser(h http.Header, user string) {
	if user != "" {
		h.Set("Authorization", "Basic "+base64Std(user+":"))
	}
}

// streamTimer cancels a streaming call whose first message does not arrive
// within the request timeout; stop it once the stream is established.
type streamTimer struct {
	t       *time.Timer
	expired chan struct{}
}

func (c *Client) startStreamTimer(cancel context.CancelFunc) *streamTimer {
	st := &streamTimer{expired: make(chan struct{})}
	if c.cfg.RequestTimeout > 0 {
		st.t = time.AfterFunc(c.cfg.RequestTimeout, func() { close(st.expired); cancel() })
	}
	return st
}

func (st *streamTimer) stop() {
	if st.t != nil {
		st.t.Stop()
	}
}

// timedOut reports whether the timer fired.
func (st *streamTimer) timedOut() bool {
	select {
	case <-st.expired:
		return true
	default:
		return false
	}
}

// timeoutErr is the error for a stream whose handshake took too long.
func timeoutErr(op, id string, err error) error {
	return &Error{Op: op, SandboxID: id, Message: "no response within the request timeout",
		kinds: []error{ErrTimeout}, err: err}
}
