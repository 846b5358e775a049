package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxAPIBody bounds a control-plane response (lists of 100 sandboxes are far smaller).
const maxAPIBody = 32 << 20

// apiCall describes one control-plane request.
type apiCall struct {
	op         string
	method     string
	path       string
	query      url.Values
	body       any
	idempotent bool
	sandboxID  string
}

// apiResult is what the caller needs from a successful response besides the body.
type apiResult struct {
	status int
	header http.Header
}

// doAPI sends a control-plane request, retrying idempotent calls, and
// decodes a JSON response into out (when non-nil).
func (c *Client) doAPI(ctx context.Context, call apiCall, out any) (apiResult, error) {
	var payload []byte
	if call.body != nil {
		b, err := json.Marshal(call.body)
		if err != nil {
			return apiResult{}, fmt.Errorf("e2b: %s: encode request: %w", call.op, err)
		}
		payload = b
	}
	var res apiResult
	err := c.withRetry(ctx, call.idempotent, func(ctx context.Context) error {
		var err error
		res, err = c.apiAttempt(ctx, call, payload, out)
		return err
	})
	return res, wrapErr(call.op, call.sandboxID, err)
}

func (c *Client) apiAttempt(ctx context.Context, call apiCall, payload []byte, out any) (apiResult, error) {
	if c.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	u := c.cfg.APIURL + call.path
	if len(call.query) > 0 {
		u += "?" + call.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, call.method, u, body)
	if err != nil {
		return apiResult{}, err
	}
	for k, v := range c.cfg.Headers {
		req.Header[k] = v
	}
	req.Header.Set("X-API-Key", c.cfg.APIKey)
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return apiResult{}, err
	}
	defer drainClose(resp.Body)
	res := apiResult{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode >= 300 {
		return res, apiError(call, resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return res, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAPIBody)).Decode(out); err != nil {
		return res, fmt.Errorf("decode response: %w", err)
	}
	return res, nil
}

// apiErrorBody is the control plane's error shape.
type apiErrorBody struct {
	Code      int    `json:"code"`
	Message   string `json:"message"`
	ErrorCode string `json:"error_code"`
}

// apiError maps an error response. Like the official SDKs it trusts the
// body's code over the status line when they disagree.
func apiError(call apiCall, resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body apiErrorBody
	if json.Unmarshal(raw, &body) != nil || body.Message == "" {
		body.Message = string(bytes.TrimSpace(raw))
	}
	code := resp.StatusCode
	if body.Code >= 400 && body.Code < 600 {
		code = body.Code
	}
	e := &Error{Op: call.op, StatusCode: code, Code: body.ErrorCode, Message: body.Message,
		SandboxID: call.sandboxID, kinds: kindsForStatus(code),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if code == http.StatusNotFound && call.sandboxID != "" {
		e.kinds = []error{ErrSandboxNotFound, ErrNotFound}
	}
	return e
}
