package main

import (
	"flag"
	"fmt"
	"strings"
)

// serve's --template is two flags in one. Its session knob (the template
// code-interpreter sessions run, SESSIONBOX_TEMPLATE) came first; a value
// NAME=BUILTIN instead adds a template to the local runtime, as `sessionbox
// runtime --template` does, so custom sessions may name it. Template names
// never hold '=', so the two cannot be mistaken for each other.

// envRuntimeTemplates is the variable of serve's runtime templates.
const envRuntimeTemplates = "SESSIONBOX_TEMPLATES"

// shareTemplateFlag makes fs's --template (the knob AddFlags defined) also
// take NAME=BUILTIN values into runtime.
func shareTemplateFlag(fs *flag.FlagSet, runtime templateFlag) {
	f := fs.Lookup("template")
	if f == nil {
		panic("serve: the session knobs define no --template")
	}
	f.Value = templateOrRuntime{knob: f.Value, runtime: runtime}
	f.Usage += "; `NAME=DEFINITION` instead adds a template custom sessions may name, DEFINITION being base, code-interpreter-v1 or the path of a JSON file " +
		"(repeatable, comma-separated in $" + envRuntimeTemplates + ")"
}

type templateOrRuntime struct {
	knob    flag.Value
	runtime templateFlag
}

func (v templateOrRuntime) String() string {
	if v.knob == nil {
		return ""
	}
	return v.knob.String()
}

func (v templateOrRuntime) Set(s string) error {
	if strings.Contains(s, "=") {
		return v.runtime.Set(s)
	}
	return v.knob.Set(s)
}

// runtimeTemplatesFromEnv reads SESSIONBOX_TEMPLATES unless --template
// named runtime templates already.
func runtimeTemplatesFromEnv(runtime templateFlag, getenv func(string) string) error {
	v := getenv(envRuntimeTemplates)
	if v == "" || len(runtime) > 0 {
		return nil
	}
	if err := runtime.Set(v); err != nil {
		return fmt.Errorf("%s: %q: %w", envRuntimeTemplates, v, err)
	}
	return nil
}
