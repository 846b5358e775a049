// Command authorizer is the API's Lambda REQUEST authorizer: API keys from
// the tenant's table, and JWTs when configured.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

func main() {
	lambda.Start(lambdaenv.MustAuthorizer().Handle)
}
