package main

import (
	"maps"
	"testing"
)

// TestTemplateFlags: --template and E2BLOCAL_TEMPLATES reach the runtime's
// configured templates, the flag winning.
func TestTemplateFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want map[string]string
	}{
		{"none", nil, nil, map[string]string{}},
		{"flags", []string{"--template", "a=base", "--template", "b=code-interpreter-v1"}, nil, map[string]string{"a": "base", "b": "code-interpreter-v1"}},
		{"variable", nil, map[string]string{"E2BLOCAL_TEMPLATES": "a=base, b=code-interpreter-v1"}, map[string]string{"a": "base", "b": "code-interpreter-v1"}},
		{"flag wins", []string{"--template", "c=base"}, map[string]string{"E2BLOCAL_TEMPLATES": "a=base"}, map[string]string{"c": "base"}},
	}
	for _, c := range cases {
		cfg, err := runtimeFlags(c.args, func(k string) string { return c.env[k] })
		if err != nil || !maps.Equal(cfg.Templates, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, cfg.Templates, err, c.want)
		}
	}
	if _, err := runtimeFlags([]string{"--template", "nameonly"}, func(string) string { return "" }); err == nil {
		t.Error("--template without =BUILTIN accepted")
	}
}
