// Command execute is the execute Lambda function: its routes' integrations stream, so
// it always answers in API Gateway's streaming format (NDJSON when the
// client asks for it, JSON otherwise).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Execute)
	lambda.Start(env.StreamingAPI())
}
