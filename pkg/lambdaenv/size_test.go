package lambdaenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxBootstrapBytes is the most an API bootstrap may weigh (14 MB; the
// mcp function, which links the MCP server, is not held to it). Sizes move
// in 64 KiB steps (the linker's segment alignment on arm64); the largest,
// status (the API plus the playground page), is 13.9 MB with the OpenAPI
// document embedded gzipped, so the budget leaves about one step: what
// grows it past that should be weighed, and a dependency that turns off
// method elimination adds megabytes.
const maxBootstrapBytes = 14_000_000

// TestBootstrapSizes builds functions exactly as `make build` does
// (linux/arm64, lambda.norpc, stripped) and checks their size. The API
// functions share one build (execute stands for them) but status, which
// adds the playground; runs, reaper and authorizer differ. A
// dependency that disables the linker's method elimination (reflect
// Method lookups by non-constant name) shows up here first.
func TestBootstrapSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and links five functions for linux/arm64; make test runs it")
	}
	t.Parallel()
	fns := []string{"execute", "status", "runs", "reaper", "authorizer"}
	// One go build for all: it compiles the shared packages once and links
	// the binaries in parallel; -o names a directory for several mains.
	dir := t.TempDir()
	args := []string{"build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-trimpath", "-o", dir + string(filepath.Separator)}
	for _, fn := range fns {
		args = append(args, "../../functions/"+fn)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %v: %v\n%s", fns, err, out)
	}
	for _, fn := range fns {
		st, err := os.Stat(filepath.Join(dir, fn))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-10s %11d bytes", fn, st.Size())
		if st.Size() > maxBootstrapBytes {
			t.Errorf("%s bootstrap is %d bytes, over %d", fn, st.Size(), maxBootstrapBytes)
		}
	}
}
