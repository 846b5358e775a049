// Command hello is the smallest Go Lambda function: the baseline the
// functions' init time is measured against.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, in map[string]any) (string, error) { return "hello", nil })
}
