package main

import (
	"maps"
	"testing"
)

// TestServeTemplateFlags: --template and SESSIONBOX_TEMPLATES reach serve's
// options as the runtime's do, the flag winning.
func TestServeTemplateFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  string
		want map[string]string
	}{
		{"none", nil, "", map[string]string{}},
		{"flags", []string{"--template", "a=base", "--template", "b=code-interpreter-v1"}, "", map[string]string{"a": "base", "b": "code-interpreter-v1"}},
		{"variable", nil, "a=base, b=code-interpreter-v1", map[string]string{"a": "base", "b": "code-interpreter-v1"}},
		{"flag wins", []string{"--template", "c=base"}, "a=base", map[string]string{"c": "base"}},
	}
	for _, c := range cases {
		o, err := serveFlags(c.args, func(k string) string { return map[string]string{"SESSIONBOX_TEMPLATES": c.env}[k] })
		if err != nil || !maps.Equal(o.templates, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, o.templates, err, c.want)
		}
	}
	// A name alone is still the session knob: the template code
	// interpreter sessions run.
	o, err := serveFlags([]string{"--template", "my-ci", "--template", "a=base"}, func(string) string { return "" })
	if err != nil || o.session.DefaultTemplate != "my-ci" || !maps.Equal(o.templates, map[string]string{"a": "base"}) {
		t.Errorf("knob and runtime template: %q %v %v", o.session.DefaultTemplate, o.templates, err)
	}
	if _, err := serveFlags(nil, func(k string) string { return map[string]string{"SESSIONBOX_TEMPLATES": "=base"}[k] }); err == nil {
		t.Error("SESSIONBOX_TEMPLATES=\"=base\" accepted")
	}
}
