// Command naive is what a Go developer writes first against the client
// oapi-codegen generates from pkg/api/openapi.json (`-generate
// types,client`): a session started, code executed, a file written as
// bytes and read back. scripts/contract/check.sh generates the package
// ./api into a copy of this module and builds the two: the check is that
// it compiles, with nothing hand-written beside it. (In the repository the
// package ./api is absent, so this module builds only there.)
package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/sessionbox/sessionbox/scripts/contract/naive/api"
)

func main() {
	ctx := context.Background()
	auth := api.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+os.Getenv("SESSIONBOX_API_KEY"))
		return nil
	})
	c, err := api.NewClientWithResponses(os.Getenv("SESSIONBOX_URL"), auth)
	if err != nil {
		log.Fatal(err)
	}
	const id = "naive-go"

	started, err := c.StartSandboxWithResponse(ctx, id, nil, api.StartSandboxJSONRequestBody{})
	if err != nil || started.JSON200 == nil {
		log.Fatalf("start: %v %s", err, started.Body)
	}

	run, err := c.ExecuteWithResponse(ctx, id, nil, api.ExecuteJSONRequestBody{Code: "print('hi')\n1 + 1"})
	if err != nil || run.JSON200 == nil {
		log.Fatalf("execute: %v", err)
	}
	// A 200 is the result, or a Problem when the call failed after 10 s.
	if p, err := run.JSON200.AsProblem(); err == nil && p.Type != "" {
		log.Fatalf("execute failed late: %s", p.Detail)
	}
	res, err := run.JSON200.AsExecutionResult()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)

	data := []byte("a,b\n1,2\n")
	put, err := c.WriteFileWithBodyWithResponse(ctx, id, &api.WriteFileParams{Path: "data/in.csv"},
		"application/octet-stream", bytes.NewReader(data))
	if err != nil || put.JSON200 == nil {
		log.Fatalf("write: %v", err)
	}
	got, err := c.ReadFileWithResponse(ctx, id, &api.ReadFileParams{Path: "data/in.csv"})
	if err != nil || got.StatusCode() != http.StatusOK {
		log.Fatalf("read: %v", err)
	}
	fmt.Println(bytes.Equal(got.Body, data), put.JSON200.Size)
}
