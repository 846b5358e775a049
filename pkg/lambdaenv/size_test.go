package lambdaenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxBootstrapBytes is the most a function's bootstrap may weigh.
const maxBootstrapBytes = 15 << 20

// TestBootstrapSizes builds functions exactly as `make build` does
// (linux/arm64, lambda.norpc, stripped) and checks their size. The API
// functions share one build; runs, reaper and authorizer differ. A
// dependency that disables the linker's method elimination (reflect
// Method lookups by non-constant name) shows up here first.
func TestBootstrapSizes(t *testing.T) {
	dir := t.TempDir()
	for _, fn := range []string{"execute", "runs", "reaper", "authorizer"} {
		bin := filepath.Join(dir, fn)
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-trimpath", "-o", bin, "../../functions/"+fn)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", fn, err, out)
		}
		st, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-10s %5.1f MB", fn, float64(st.Size())/(1<<20))
		if st.Size() > maxBootstrapBytes {
			t.Errorf("%s bootstrap is %d bytes, over %d", fn, st.Size(), maxBootstrapBytes)
		}
	}
}
