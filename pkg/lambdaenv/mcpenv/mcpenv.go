// Package mcpenv is the mcp function's handler: the API of sessionenv with
// the MCP transport plugged in. It is its own package so that the mcp
// function alone links pkg/mcpserver and the MCP SDK (sessionenv serves
// every other API function), and so that tests replay events through the
// same handler the function serves.
package mcpenv

import (
	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/apigw"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
)

// StreamingAPI is the mcp function's handler: its route streams, so tool
// calls may run as long as an execution.
func StreamingAPI(e *sessionenv.Env) apigw.StreamingHandler {
	t := mcpserver.NewAPITransport(e.Manager, mcpserver.Options{Logger: e.Log})
	return e.StreamingAPI(api.WithMCP(t))
}
