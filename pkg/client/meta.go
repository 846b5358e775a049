package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Health asks whether the API is up; it needs no key. The answer is the
// service's status word ("ok").
func (c *Client) Health(ctx context.Context) (string, error) {
	var out struct {
		Status string `json:"status"`
	}
	if err := c.doJSON(ctx, http.MethodGet, "/healthz", nil, &out); err != nil {
		return "", err
	}
	return out.Status, nil
}

// OpenAPI returns the API's OpenAPI document, as the service serves it.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/openapi.json", nil, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/openapi.json: %w", err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("GET /v1/openapi.json: the answer is not JSON")
	}
	return b, nil
}
