package lambdaenv_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// infraSource is the CDK app's code (its own Go module, so it cannot import
// this one), tests left out.
func infraSource(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "infra", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("infra sources: %v %v", files, err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestStackSetsEveryVariable: every variable the functions' Load reads can
// be set by the CDK stack, and the stack sets none that Load does not
// read. The variables Load is asked for are recorded, so a new one cannot
// be missed.
func TestStackSetsEveryVariable(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	_, _ = lambdaenv.Load(func(k string) string { read[k] = true; return "" },
		lambdaenv.NeedStore|lambdaenv.NeedSandboxes|lambdaenv.NeedBlobs|lambdaenv.NeedBus)
	// Not the stack's to set, each for its reason.
	notFromStack := map[string]string{
		lambdaenv.EnvE2BAPIKey:     "local runs only: in production the key is in Secrets Manager, never in the template",
		lambdaenv.EnvE2BSandboxURL: "local runs only: one URL for all sandbox traffic is the local runtime's convention",
		lambdaenv.EnvLogLevel:      "Lambda sets it from the function's application log level, which the stack sets",
	}
	src := infraSource(t)
	inStack := map[string]bool{}
	for _, m := range regexp.MustCompile(`"((?:SESSIONBOX|E2B)_[A-Z0-9_]+)"`).FindAllStringSubmatch(src, -1) {
		inStack[m[1]] = true
	}
	for _, v := range sorted(read) {
		if _, ok := notFromStack[v]; ok {
			if inStack[v] {
				t.Errorf("the stack sets %s: %s", v, notFromStack[v])
			}
			continue
		}
		if !inStack[v] {
			t.Errorf("the functions read %s, which the CDK stack (infra/) never sets", v)
		}
	}
	for _, v := range sorted(inStack) {
		if !read[v] {
			t.Errorf("the CDK stack names %s, which the functions do not read", v)
		}
	}
	if !strings.Contains(src, "ApplicationLogLevelV2") {
		t.Error("the stack does not set the functions' application log level")
	}
}

// TestFunctionListsAgree: the functions are listed in lambdaenv.Functions;
// the Makefile, the functions/ directory, the CDK stack and its tests hold
// copies, which must name the same functions (the Makefile and the stack in
// the same order).
func TestFunctionListsAgree(t *testing.T) {
	t.Parallel()
	var want []string
	for _, f := range lambdaenv.Functions() {
		want = append(want, f.Name)
	}
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	m := regexp.MustCompile(`(?m)^FUNCTIONS\s*:?=\s*(.+)$`).FindStringSubmatch(read("Makefile"))
	if m == nil {
		t.Fatal("the Makefile has no FUNCTIONS line")
	}
	specs := regexp.MustCompile(`\{name: "([a-z]+)"`).FindAllStringSubmatch(read("infra/functions.go"), -1)
	var stack []string
	for _, s := range specs {
		stack = append(stack, s[1])
	}
	tm := regexp.MustCompile(`var functionNames = \[\]string\{([^}]*)\}`).FindStringSubmatch(read("infra/helpers_test.go"))
	if tm == nil {
		t.Fatal("infra/helpers_test.go has no functionNames")
	}
	stackTests := strings.Split(strings.NewReplacer(`"`, "", " ", "").Replace(tm[1]), ",")
	entries, err := os.ReadDir(filepath.Join(repoRoot, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(repoRoot, "functions", e.Name(), "main.go")); e.IsDir() && err == nil {
			dirs = append(dirs, e.Name())
		}
	}
	sortedWant := slices.Sorted(slices.Values(want))
	for name, got := range map[string][]string{
		"Makefile FUNCTIONS":           strings.Fields(m[1]),
		"infra fnSpecs":                stack,
		"infra tests' functionNames":   stackTests,
		"functions/<name>/main.go (*)": dirs, // (*): in any order
	} {
		exp := want
		if strings.HasSuffix(name, "(*)") {
			exp, got = sortedWant, slices.Sorted(slices.Values(got))
		}
		if !slices.Equal(got, exp) {
			t.Errorf("%s = %v, want %v (lambdaenv.Functions)", name, got, exp)
		}
	}
}
