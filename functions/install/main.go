// Command install is the install Lambda function: its routes' integrations stream, so
// it always answers in API Gateway's streaming format (NDJSON when the
// client asks for it, JSON otherwise).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Install)
	lambda.Start(env.StreamingAPI())
}
