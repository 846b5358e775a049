// Package client is a Go client for the sessionbox HTTP API, used by the
// `sessionbox` command line and usable by agent frameworks written in Go.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Client calls one sessionbox API with one key.
type Client struct {
	baseURL string
	apiKey  string
	http    *http.Client
}

// New returns a client for the API at baseURL (e.g. http://127.0.0.1:8080).
// A nil httpClient means http.DefaultClient.
func New(baseURL, apiKey string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), apiKey: apiKey, http: httpClient}
}

func (c *Client) sessionPath(id, rest string) string {
	return "/v1/sessions/" + url.PathEscape(id) + rest
}

// do sends a request and returns the response when its status is 2xx;
// otherwise the API's problem as an error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, body, header)
	if err != nil {
		return nil, err
	}
	return c.send(req)
}

// newRequest is a request to the API with the client's key.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return req, nil
}

// send sends a request to the API: a 2xx answer is returned, any other is
// read as the API's Problem.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readProblem(resp)
}

// doJSON sends in as JSON (when not nil) and decodes a 2xx answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	h := http.Header{"Accept": {"application/json"}}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
		h.Set("Content-Type", "application/json")
	}
	resp, err := c.do(ctx, method, path, body, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// ExecuteRequest is one execution.
type ExecuteRequest struct {
	Code        string            `json:"code"`
	TimeoutSecs int               `json:"timeoutSecs,omitempty"`
	Envs        map[string]string `json:"envs,omitempty"`
	Context     string            `json:"context,omitempty"`
}

// Execute runs code in the session's kernel. With onEvent it streams, as
// ExecuteStream.
func (c *Client) Execute(ctx context.Context, sessionID string, req ExecuteRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	if onEvent != nil {
		return c.ExecuteStream(ctx, sessionID, req, onEvent)
	}
	var out session.ExecResult
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/execute"), req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExecuteStream runs code in the session's kernel with its output streamed:
// each piece reaches onEvent (which may be nil) as it happens, and the
// result joins them.
func (c *Client) ExecuteStream(ctx context.Context, sessionID string, req ExecuteRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	resp, err := c.postStream(ctx, c.sessionPath(sessionID, "/execute/stream"), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readStream(resp.Body, onEvent)
}

// postStream posts a JSON body to a streaming operation.
func (c *Client) postStream(ctx context.Context, path string, in any) (*http.Response, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodPost, path, bytes.NewReader(b),
		http.Header{"Accept": {"application/x-ndjson"}, "Content-Type": {"application/json"}})
}

func jsonDecode(r io.Reader, v any) error {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
