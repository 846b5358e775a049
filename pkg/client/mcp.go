package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectMCP connects an MCP client to the API's MCP endpoint (POST
// /v1/mcp, streamable HTTP) with the client's key. The tools act on
// sessionID, or on a session of the MCP connection's own when it is empty.
// impl names the calling program; nil names this package.
func (c *Client) ConnectMCP(ctx context.Context, sessionID string, impl *mcp.Implementation) (*mcp.ClientSession, error) {
	if impl == nil {
		impl = &mcp.Implementation{Name: "sessionbox-go-client", Version: "1"}
	}
	endpoint := c.baseURL + "/v1/mcp"
	if sessionID != "" {
		endpoint += "?" + url.Values{"session": {sessionID}}.Encode()
	}
	next := c.http.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc := *c.http
	hc.Transport = keyTransport{key: c.apiKey, next: next}
	cs, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect MCP at %s: %w", endpoint, err)
	}
	return cs, nil
}

// keyTransport adds the API key to each request of the MCP transport.
type keyTransport struct {
	key  string
	next http.RoundTripper
}

func (t keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.key != "" {
		r.Header.Set("Authorization", "Bearer "+t.key)
	}
	return t.next.RoundTrip(r)
}
