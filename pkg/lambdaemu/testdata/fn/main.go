// Command fn is a Lambda function for the emulator's tests: it echoes,
// fails, or streams depending on the request.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

type request struct {
	Action string `json:"action"`
	Text   string `json:"text"`
}

func main() {
	if os.Getenv("FAIL_INIT") != "" {
		panic("init failed on purpose")
	}
	lambda.Start(func(ctx context.Context, req request) (any, error) {
		switch req.Action {
		case "fail":
			return nil, errors.New("failed on purpose")
		case "stream-fail":
			pr, pw := io.Pipe()
			go func() {
				_, _ = pw.Write([]byte("partial\n"))
				_ = pw.CloseWithError(errors.New("broke midway"))
			}()
			return &events.APIGatewayProxyStreamingResponse{StatusCode: 200, Body: pr}, nil
		case "stream":
			pr, pw := io.Pipe()
			go func() {
				for _, part := range strings.Split(req.Text, ",") {
					_, _ = pw.Write([]byte(part + "\n"))
				}
				_ = pw.Close()
			}()
			return &events.APIGatewayProxyStreamingResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/x-ndjson"}, Body: pr}, nil
		default:
			return map[string]string{"echo": req.Text}, nil
		}
	})
}
