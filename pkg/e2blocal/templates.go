//go:build linux

package e2blocal

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
)

// The templates a runtime offers. E2B resolves a create's templateID, an
// ID or an alias with an optional ":tag", among the templates the team may
// use and answers 404 for any other; the SDKs' Template.exists asks
// GET /templates/aliases/{alias}. Here every sandbox runs the host's
// system directories under the isolation layout, so a template is which
// of the two built-in kinds a sandbox is: base, or code-interpreter-v1,
// whose Python kernel starts with the sandbox as E2B's Jupyter does.
// Config.Templates names more (the names E2B users gave their own
// templates, so their code runs here unchanged), each as one of the two.
const (
	TemplateBase            = "base"
	TemplateCodeInterpreter = "code-interpreter-v1"
)

// builtinTemplates maps each built-in template to whether its sandboxes
// start the interpreter's kernel.
var builtinTemplates = map[string]bool{TemplateBase: false, TemplateCodeInterpreter: true}

// templateName is what a configured template may be called: E2B's alias
// characters.
var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,127}$`)

// defaultTag is the one tag every template has, as in E2B.
const defaultTag = "default"

type template struct {
	id          string
	public      bool // built in, as E2B's public templates
	interpreter bool

	// From a definition file (templatedef.go).
	rootfs string              // its root filesystem dir; "" runs the host's system dirs
	envs   map[string]string   // env vars of every sandbox, under the create's
	start  agent.TemplateStart // start and ready commands, user, workdir
	shell  string              // envd's shell when rootfs is set: /bin/bash, else /bin/sh
	etcDir string              // its generated /etc (prepareRootfs)
	system []string            // bwrap binds of rootfs (prepareRootfs)
}

// templateSet is the runtime's templates by ID (an alias here: the two are
// the same for every template the runtime offers).
type templateSet map[string]template

// newTemplateSet is the built-in templates plus the configured ones, each
// named name and run as the built-in template `as`, or defined by the
// file `as` names (templatedef.go).
func newTemplateSet(configured map[string]string, python string) (templateSet, error) {
	set := templateSet{}
	for name, interp := range builtinTemplates {
		set[name] = template{id: name, public: true, interpreter: interp}
	}
	for name, as := range configured {
		if !templateName.MatchString(name) {
			return nil, fmt.Errorf("e2blocal: template name %q: want lower-case letters, digits, '-' and '_', at most 128", name)
		}
		if _, ok := builtinTemplates[name]; ok {
			return nil, fmt.Errorf("e2blocal: template %q is built in", name)
		}
		if isDefinitionFile(as) {
			t, err := loadTemplate(name, as, python)
			if err != nil {
				return nil, err
			}
			set[name] = t
			continue
		}
		interp, ok := builtinTemplates[as]
		if !ok {
			return nil, fmt.Errorf("e2blocal: template %q runs as %q, which is not one of the built-in templates (%s) and not a definition file (a path)", name, as, builtinList())
		}
		set[name] = template{id: name, interpreter: interp}
	}
	return set, nil
}

func builtinList() string {
	names := make([]string, 0, len(builtinTemplates))
	for n := range builtinTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// resolve finds the template ref names. A failure comes with E2B's status
// and message.
func (ts templateSet) resolve(ref string) (template, int, string) {
	name, tag, tagged := strings.Cut(ref, ":")
	t, ok := ts[name]
	if !ok {
		return template{}, http.StatusNotFound, fmt.Sprintf("template '%s' not found", name)
	}
	if tagged && tag != defaultTag {
		return template{}, http.StatusNotFound, fmt.Sprintf("tag '%s' does not exist for template '%s'", tag, name)
	}
	return t, 0, ""
}

// interpreter tells whether sandboxes of the template start the kernel.
func (ts templateSet) interpreter(ref string) bool {
	t, status, _ := ts.resolve(ref)
	return status == 0 && t.interpreter
}

// templateFound answers E2B's 404 for a create naming no template the
// runtime offers, and reports whether the template exists.
func (rt *Runtime) templateFound(w http.ResponseWriter, ref string) bool {
	if _, status, msg := rt.templates.resolve(ref); status != 0 {
		writeError(w, status, "%s", msg)
		return false
	}
	return true
}

// templateAliasBody is E2B's TemplateAliasResponse.
type templateAliasBody struct {
	Public     bool   `json:"public"`
	TemplateID string `json:"templateID"`
}

// handleTemplateAlias serves GET /templates/aliases/{alias}: every
// template of the runtime is the caller's own (one team), so E2B's 200.
func (rt *Runtime) handleTemplateAlias(w http.ResponseWriter, r *http.Request) {
	alias := r.PathValue("alias")
	if alias == "" || strings.Count(alias, ":") > 1 {
		writeError(w, http.StatusBadRequest, "Invalid alias format: %q", alias)
		return
	}
	t, status, msg := rt.templates.resolve(alias)
	if status != 0 {
		writeError(w, status, "%s", msg)
		return
	}
	writeJSON(w, http.StatusOK, templateAliasBody{Public: t.public, TemplateID: t.id})
}
