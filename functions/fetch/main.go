// Command fetch is the fetch Lambda function: uploads from URLs, which may
// run for minutes, so its routes' integrations stream and it always answers
// in API Gateway's streaming format. It reaches the internet on users'
// behalf through pkg/urlfetch's guard, with a role that has no S3 rights.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Fetch)
	lambda.Start(env.StreamingAPI())
}
