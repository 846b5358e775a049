// Command start is the start Lambda function: the API's routes that API Gateway
// sends it, served buffered.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

func main() {
	env := lambdaenv.MustInit(lambdaenv.Start)
	lambda.Start(env.BufferedAPI())
}
