// Command stop is the stop Lambda function: the API's routes that API Gateway
// sends it. Its integrations stream, so a start that restores a large
// workspace, or a stop that checkpoints one, may outlast API Gateway's 29 s
// buffered limit.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Stop)
	lambda.Start(env.StreamingAPI())
}
