package lambdaenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxBootstrapBytes is the most a function's bootstrap may weigh. Sizes
// move in 64 KiB steps (the linker's segment alignment on arm64), so the
// budget leaves a few steps above today's largest (execute, 13.3 MiB, once
// the MCP server moved out of every function but mcp): a dependency that
// turns off method elimination adds megabytes, not steps.
const maxBootstrapBytes = 14 << 20

// TestBootstrapSizes builds functions exactly as `make build` does
// (linux/arm64, lambda.norpc, stripped) and checks their size. The API
// functions share one build; runs, reaper and authorizer differ. A
// dependency that disables the linker's method elimination (reflect
// Method lookups by non-constant name) shows up here first.
func TestBootstrapSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and links the four functions for linux/arm64; make test runs it")
	}
	t.Parallel()
	fns := []string{"execute", "runs", "reaper", "authorizer"}
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
		t.Logf("%-10s %5.1f MB", fn, float64(st.Size())/(1<<20))
		if st.Size() > maxBootstrapBytes {
			t.Errorf("%s bootstrap is %d bytes, over %d", fn, st.Size(), maxBootstrapBytes)
		}
	}
}
