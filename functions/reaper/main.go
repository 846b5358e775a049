// Command reaper is the reaper Lambda function: on each scheduled tick it
// pauses or kills due sessions and sweeps orphan sandboxes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

func main() {
	env := sessionenv.MustInit(lambdaenv.Reaper)
	lambda.Start(env.Reaper())
}
