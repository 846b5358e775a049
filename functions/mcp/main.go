// Command mcp is the MCP Lambda function: it serves /v1/mcp, the Model
// Context Protocol's streamable HTTP transport over the caller's sessions.
// Its route streams, so tool calls may run as long as an execution. It is
// the only function that links the MCP server and its SDK (pkg/lambdaenv/mcpenv).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/mcpenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.MCP)
	lambda.Start(mcpenv.StreamingAPI(env))
}
