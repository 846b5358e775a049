// Command runs is the runs Lambda function: it carries out "Run Requested"
// events from the tenant's bus; failures go to the dead-letter queue.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Runs)
	lambda.Start(env.Runs().Handle)
}
