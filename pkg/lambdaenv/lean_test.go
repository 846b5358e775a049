package lambdaenv_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// TestAuthorizerInitIsCheap: every cold start runs the init of each linked
// package, the authorizer's on every uncached request's path. pkg/authorizer
// once compiled a regexp with a {1,200} repetition at init: 200 KB in 2,600
// allocations. The bootstrap is run with GODEBUG=inittrace=1 and no
// configuration, so it reports its inits and exits; none of our packages
// may allocate more than 16 KiB at init.
func TestAuthorizerInitIsCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and links the authorizer's bootstrap; make test runs it")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "authorizer")
	if out, err := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "../../functions/authorizer").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	out, _ := cmd.CombinedOutput() // exits 1: no configuration
	trace := regexp.MustCompile(`(?m)^init (github\.com/sessionbox/\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	inits := trace.FindAllStringSubmatch(string(out), -1)
	if len(inits) == 0 {
		t.Fatalf("no init trace of our packages in:\n%s", out)
	}
	for _, m := range inits {
		if bytes, _ := strconv.Atoi(m[2]); bytes > 16<<10 {
			t.Errorf("%s allocates %s bytes in %s allocations at init", m[1], m[2], m[3])
		}
	}
}
