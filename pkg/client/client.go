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

// Problem is an error answer of the API (application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string {
	if p.Detail != "" {
		return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
	}
	return fmt.Sprintf("%d %s", p.Status, p.Title)
}

func (c *Client) sessionPath(id, rest string) string {
	return "/v1/sessions/" + url.PathEscape(id) + rest
}

// do sends a request and returns the response when its status is 2xx;
// otherwise the API's problem as an error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
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
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readProblem(resp)
}

func readProblem(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	p := &Problem{}
	if err := json.Unmarshal(raw, p); err != nil || p.Status == 0 {
		return &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(raw))}
	}
	return p
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

// SessionView is a session as the API describes it.
type SessionView struct {
	SessionID        string `json:"sessionId"`
	State            string `json:"state"`
	SandboxID        string `json:"sandboxId,omitempty"`
	Template         string `json:"template,omitempty"`
	CreatedAt        string `json:"createdAt,omitempty"`
	LastActivityAt   string `json:"lastActivityAt,omitempty"`
	IdleDeadline     string `json:"idleDeadline,omitempty"`
	LifetimeDeadline string `json:"lifetimeDeadline,omitempty"`
	// LastCheckpoint is the workspace's last good checkpoint, if any.
	LastCheckpoint    *session.CheckpointInfo `json:"lastCheckpoint,omitempty"`
	CheckpointProblem string                  `json:"checkpointProblem,omitempty"`
}

// Sessions returns one page of the caller's sessions.
func (c *Client) Sessions(ctx context.Context, limit int, cursor string) (sessions []SessionView, next string, err error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out struct {
		Sessions   []SessionView `json:"sessions"`
		NextCursor string        `json:"nextCursor"`
	}
	err = c.doJSON(ctx, http.MethodGet, "/v1/sessions?"+q.Encode(), nil, &out)
	return out.Sessions, out.NextCursor, err
}

// Status describes one session.
func (c *Client) Status(ctx context.Context, sessionID string) (*SessionView, error) {
	var out SessionView
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/sandbox"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Stop kills the session's sandbox.
func (c *Client) Stop(ctx context.Context, sessionID string) error {
	return c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/sandbox/stop"), nil, nil)
}

// ExecuteRequest is one execution.
type ExecuteRequest struct {
	Code        string            `json:"code"`
	TimeoutSecs int               `json:"timeoutSecs,omitempty"`
	Envs        map[string]string `json:"envs,omitempty"`
	Context     string            `json:"context,omitempty"`
}

// Execute runs code in the session's kernel. With onEvent it streams: each
// piece of output reaches onEvent as it happens.
func (c *Client) Execute(ctx context.Context, sessionID string, req ExecuteRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	path := c.sessionPath(sessionID, "/execute")
	if onEvent == nil {
		var out session.ExecResult
		if err := c.doJSON(ctx, http.MethodPost, path, req, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, path, bytes.NewReader(b),
		http.Header{"Accept": {"application/x-ndjson"}, "Content-Type": {"application/json"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readStream(resp.Body, onEvent)
}

func jsonDecode(r io.Reader, v any) error {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
