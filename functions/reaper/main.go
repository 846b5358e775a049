// Command reaper is the reaper Lambda function: on each scheduled tick it
// pauses or kills due sessions and sweeps orphan sandboxes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

func main() {
	env := lambdaenv.MustInit(lambdaenv.Reaper)
	lambda.Start(env.Reaper().Handle)
}
