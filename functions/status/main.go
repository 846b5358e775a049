// Command status is the status Lambda function: the API's routes that API Gateway
// sends it, served buffered, and the playground page at "/" (pkg/playground),
// which the stack routes here without the authorizer unless it is turned off.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Status)
	lambda.Start(env.StatusAPI())
}
