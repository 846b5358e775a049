// Command mcp is the MCP Lambda function: it serves /v1/mcp, the Model
// Context Protocol's streamable HTTP transport over the caller's sessions.
// Its route streams, so tool calls may run as long as an execution.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.MCP)
	// Only this function links the MCP server and its SDK.
	mcp := mcpserver.NewAPITransport(env.Manager, mcpserver.Options{Logger: env.Log})
	lambda.Start(env.StreamingAPI(api.WithMCP(mcp)))
}
