package sessionconfig_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/sessionconfig"
)

// TestInfraKnobsMatch holds the CDK stack's copy of the knob list
// (infra/config.go's sessionKnobs; infra is its own Go module and cannot
// import this package) to Knobs: the same variables, and a boolean knob
// checked as a boolean by the stack, every other one as a number or a name.
// A knob missing from the stack could not be set in production; one the
// stack checked by the wrong rule would fail a deploy on a valid value or
// let an invalid one through to the functions' init.
func TestInfraKnobsMatch(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "infra", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`\{"([A-Za-z]+)", "(SESSIONBOX_[A-Z0-9_]+)", (knob[A-Za-z]+)\}`).FindAllStringSubmatch(string(src), -1)
	if len(rows) == 0 {
		t.Fatal("infra/config.go: no sessionKnobs rows found")
	}
	inInfra := map[string]string{}
	for _, r := range rows {
		if _, dup := inInfra[r[2]]; dup {
			t.Errorf("infra/config.go lists %s twice", r[2])
		}
		inInfra[r[2]] = r[3]
	}
	for _, k := range sessionconfig.Knobs() {
		kind, ok := inInfra[k.Env]
		if !ok {
			t.Errorf("infra/config.go's sessionKnobs lacks %s: the stack cannot set it", k.Env)
			continue
		}
		if (kind == "knobBool") != k.Bool {
			t.Errorf("infra/config.go checks %s as %s; the functions read it as bool=%v", k.Env, kind, k.Bool)
		}
		delete(inInfra, k.Env)
	}
	for env := range inInfra {
		t.Errorf("infra/config.go's sessionKnobs has %s, which is no knob of pkg/sessionconfig", env)
	}
}
