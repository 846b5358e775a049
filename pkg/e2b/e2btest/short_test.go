package e2btest_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

// childEnv makes this test binary a child whose TestMain uses one of the
// -short helpers (its value names which), so each is seen from outside,
// with and without -short.
const childEnv = "E2BTEST_SHORT_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "main":
		os.Exit(e2btest.MainUnlessShort(m))
	case "examples":
		short := e2btest.SkipExamplesIfShort()
		fmt.Printf("short=%v skip=%s\n", short, flag.Lookup("test.skip").Value)
		os.Exit(0)
	default:
		os.Exit(m.Run())
	}
}

// TestChildWork stands for a test that starts sandboxes; only a child runs
// it.
func TestChildWork(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestShortHelpers in a child process")
	}
	e2btest.NeedsSandboxes(t)
	fmt.Println("child work ran")
}

func TestShortHelpers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, child string
		args        []string
		want        []string
		notWant     string
	}{
		{"NeedsSandboxes skips under -short", "plain", []string{"-test.short"},
			[]string{"--- SKIP: TestChildWork", "skipped under -short"}, "child work ran"},
		{"NeedsSandboxes runs without -short", "plain", nil, []string{"child work ran"}, "SKIP"},
		{"MainUnlessShort runs nothing under -short", "main", []string{"-test.short"},
			[]string{"every test here starts real sandboxes"}, "child work ran"},
		{"MainUnlessShort runs the tests without -short", "main", nil, []string{"child work ran"}, "every test here"},
		{"SkipExamplesIfShort adds the examples to -skip", "examples", []string{"-test.short", "-test.skip=^TestX$"},
			[]string{"short=true skip=^TestX$|^Example"}, ""},
		{"SkipExamplesIfShort leaves -skip alone without -short", "examples", nil, []string{"short=false skip=\n"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-test.run=^TestChildWork$", "-test.v"}, c.args...)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), childEnv+"="+c.child)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("child output lacks %q:\n%s", w, out)
				}
			}
			if c.notWant != "" && strings.Contains(string(out), c.notWant) {
				t.Errorf("child output has %q:\n%s", c.notWant, out)
			}
		})
	}
}
