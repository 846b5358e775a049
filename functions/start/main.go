// Command start is the start Lambda function: the API's routes that API Gateway
// sends it, served buffered.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Start)
	lambda.Start(env.BufferedAPI())
}
