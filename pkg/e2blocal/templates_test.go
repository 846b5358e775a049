//go:build linux

package e2blocal

import (
	"net/http"
	"strings"
	"testing"
)

func TestTemplateSetConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		configured map[string]string
		wantErr    string
	}{
		{"none", nil, ""},
		{"one of each kind", map[string]string{"my-agent": TemplateCodeInterpreter, "worker_1": TemplateBase}, ""},
		{"runs as an unknown template", map[string]string{"mine": "ubuntu"}, "not one of the built-in templates"},
		{"shadows a built-in", map[string]string{TemplateBase: TemplateCodeInterpreter}, "is built in"},
		{"bad name", map[string]string{"My Template": TemplateBase}, "template name"},
		{"tag in the name", map[string]string{"mine:v2": TemplateBase}, "template name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := newTemplateSet(c.configured, "/usr/bin/python3")
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("err %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestTemplateLookups: GET /templates/aliases/{alias}, what the SDKs'
// Template.exists asks, answers E2B's TemplateAliasResponse for the
// runtime's templates and 404 for others; a create naming a template the
// runtime lacks gets E2B's 404 before any sandbox starts.
func TestTemplateLookups(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1, Templates: map[string]string{"my-agent": TemplateCodeInterpreter}})
	cases := []struct {
		alias  string
		status int
		body   templateAliasBody
	}{
		{"base", 200, templateAliasBody{Public: true, TemplateID: "base"}},
		{"code-interpreter-v1", 200, templateAliasBody{Public: true, TemplateID: "code-interpreter-v1"}},
		{"base:default", 200, templateAliasBody{Public: true, TemplateID: "base"}},
		{"my-agent", 200, templateAliasBody{Public: false, TemplateID: "my-agent"}},
		{"nope", 404, templateAliasBody{}},
		{"base:v2", 404, templateAliasBody{}},
		{"code-interpreter", 404, templateAliasBody{}},
		{"a:b:c", 400, templateAliasBody{}},
	}
	for _, c := range cases {
		r := api(t, rt, "GET", "/templates/aliases/"+c.alias, nil)
		if c.status != http.StatusOK {
			assertErrorBody(t, r, c.status)
			continue
		}
		var got templateAliasBody
		r.decode(t, &got)
		if r.status != 200 || got != c.body {
			t.Errorf("%s: %d %s, want %+v", c.alias, r.status, r.body, c.body)
		}
	}
	for _, path := range []string{"/sandboxes", "/v2/sandboxes"} {
		r := api(t, rt, "POST", path, map[string]any{"templateID": "nope"})
		assertErrorBody(t, r, http.StatusNotFound)
		if !strings.Contains(string(r.body), "template 'nope' not found") {
			t.Errorf("%s: %s", path, r.body)
		}
	}
	rt.mu.Lock()
	n := len(rt.sandboxes)
	rt.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sandboxes after refused creates", n)
	}
	if !rt.templates.interpreter("my-agent") || rt.templates.interpreter("base") {
		t.Error("a configured template does not run as the built-in it names")
	}
}
