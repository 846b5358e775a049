package lambdaenv_test

import (
	"os/exec"
	"slices"
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

// TestOnlyMCPLinksMCPServer: the MCP server, its SDK and JSON-schema
// library weigh about 2 MB in a bootstrap. pkg/api takes the MCP transport
// as an option, so only the mcp function, which serves /v1/mcp, links them.
func TestOnlyMCPLinksMCPServer(t *testing.T) {
	t.Parallel()
	heavy := []string{"github.com/sessionbox/sessionbox/pkg/mcpserver",
		"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/google/jsonschema-go/jsonschema"}
	for _, fn := range []string{"start", "stop", "status", "execute", "files", "install", "fetch", "runs", "reaper", "authorizer", "mcp"} {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "../../functions/"+fn).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			for _, h := range heavy {
				if linked := slices.Contains(deps, h); linked != (fn == "mcp") {
					t.Errorf("%s links %s: %v", fn, h, linked)
				}
			}
		})
	}
}
