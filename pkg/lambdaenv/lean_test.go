package lambdaenv_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAuthorizerStaysLean guards the split between lambdaenv and
// sessionenv: the authorizer, on every uncached request's path, must not
// link (or initialise) the E2B client, S3, EventBridge or the HTTP API.
func TestAuthorizerStaysLean(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "../../functions/authorizer").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, heavy := range []string{
		"github.com/sessionbox/sessionbox/pkg/e2b", "github.com/sessionbox/sessionbox/pkg/api",
		"github.com/aws/aws-sdk-go-v2/service/s3", "github.com/aws/aws-sdk-go-v2/service/eventbridge",
		"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "google.golang.org/protobuf/proto",
	} {
		for _, d := range deps {
			if d == heavy {
				t.Errorf("the authorizer links %s", heavy)
			}
		}
	}
}

// TestNoFunctionLinksClient: the HTTP client (pkg/client) is for programs
// that call the API from outside; a Lambda serving the API has no use for
// it, and linking it made every API bootstrap larger.
func TestNoFunctionLinksClient(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "../../functions/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if d == "github.com/sessionbox/sessionbox/pkg/client" {
			t.Fatalf("a Lambda function links %s", d)
		}
	}
}
