//go:build linux

package e2blocal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// templateDef is a template's definition file: what an E2B template built
// from a Dockerfile or the template SDK holds, in local form. Every field
// is optional.
//
//	{
//	  "rootfs":   "rootfs",           // the root filesystem directory, relative to this file
//	  "builtin":  "base",             // or code-interpreter-v1: start the Python kernel
//	  "startCmd": "python3 -m http.server 8000",
//	  "readyCmd": "curl -sf localhost:8000",
//	  "envs":     {"PORT": "8000"},
//	  "workdir":  "/home/user/app",
//	  "user":     "user"              // or root (runtime run as root)
//	}
type templateDef struct {
	Rootfs   string            `json:"rootfs"`
	Builtin  string            `json:"builtin"`
	StartCmd string            `json:"startCmd"`
	ReadyCmd string            `json:"readyCmd"`
	Envs     map[string]string `json:"envs"`
	Workdir  string            `json:"workdir"`
	User     string            `json:"user"`
}

// isDefinitionFile tells a definition file's path from a built-in name
// in --template NAME=VALUE: names never hold '/' nor end in .json.
func isDefinitionFile(v string) bool {
	return strings.Contains(v, "/") || strings.HasSuffix(v, ".json")
}

// loadTemplate reads and checks the definition file file of template name.
// python is the kernel's interpreter inside sandboxes.
func loadTemplate(name, file, python string) (template, error) {
	fail := func(format string, a ...any) (template, error) {
		return template{}, fmt.Errorf("e2blocal: template %q (%s): %s", name, file, fmt.Sprintf(format, a...))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fail("%v", err)
	}
	var d templateDef
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return fail("not a template definition: %v", err)
	}
	if d.Builtin == "" {
		d.Builtin = TemplateBase
	}
	interp, ok := builtinTemplates[d.Builtin]
	if !ok {
		return fail("builtin %q is not one of %s", d.Builtin, builtinList())
	}
	t := template{id: name, interpreter: interp, envs: d.Envs,
		start: agent.TemplateStart{StartCmd: d.StartCmd, ReadyCmd: d.ReadyCmd, User: d.User, Workdir: d.Workdir}}
	if d.Rootfs != "" {
		if t.rootfs, err = checkRootfs(d.Rootfs, filepath.Dir(file)); err != nil {
			return fail("%v", err)
		}
	}
	if err := t.check(python); err != nil {
		return fail("%v", err)
	}
	return t, nil
}

// checkRootfs resolves the root filesystem dir against base and checks that
// sandboxes can be given it.
func checkRootfs(dir, base string) (string, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("rootfs: %w", err)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("rootfs %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("rootfs: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("rootfs %s is not a directory (an image file must be unpacked into one first)", dir)
	}
	// bwrap opens bind sources as the sandbox's unprivileged host uid.
	if os.Geteuid() == 0 && !jail.Traversable(dir) {
		return "", fmt.Errorf("rootfs %s is not reachable by sandbox uids: every directory down to it must be searchable by others (chmod o+x)", dir)
	}
	return dir, nil
}

// check checks what the template runs against what its sandboxes have.
func (t *template) check(python string) error {
	for k, v := range t.envs {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("envs: bad variable %q", k)
		}
	}
	switch t.start.User {
	case "", "user":
	case "root":
		if os.Geteuid() != 0 {
			return errors.New(`user "root": sandboxes have root only when the runtime runs as root`)
		}
	default:
		return fmt.Errorf("user %q: want user or root", t.start.User)
	}
	if err := t.checkWorkdir(); err != nil {
		return err
	}
	if t.rootfs == "" {
		return nil
	}
	t.shell = "/bin/bash"
	if jail.ExecutableIn(t.rootfs, t.shell) != nil {
		t.shell = "/bin/sh"
	}
	if t.start.StartCmd != "" || t.start.ReadyCmd != "" {
		if err := jail.ExecutableIn(t.rootfs, "/bin/sh"); err != nil {
			return fmt.Errorf("the start and ready commands run through a shell, but in rootfs %s: %v", t.rootfs, err)
		}
	}
	if t.interpreter {
		if err := jail.ExecutableIn(t.rootfs, python); err != nil {
			return fmt.Errorf("the code interpreter needs Python, but in rootfs %s: %v", t.rootfs, err)
		}
	}
	return nil
}

// checkWorkdir: a workdir in the home or /tmp is made at start; elsewhere
// the root filesystem must hold it (it is read-only).
func (t *template) checkWorkdir() error {
	w := t.start.Workdir
	if w == "" {
		return nil
	}
	if !path.IsAbs(w) || path.Clean(w) != w {
		return fmt.Errorf("workdir %q: want a clean absolute path", w)
	}
	for _, writable := range []string{jail.InsideHome, "/tmp"} {
		if w == writable || strings.HasPrefix(w, writable+"/") {
			return nil
		}
	}
	if t.rootfs == "" {
		return fmt.Errorf("workdir %s: outside %s and /tmp it must be in the template's rootfs", w, jail.InsideHome)
	}
	if host, ok := jail.InRootfs(t.rootfs, w); !ok {
		return fmt.Errorf("workdir %s is not in rootfs (%s missing)", w, host)
	}
	return nil
}

// prepareRootfs builds, once the runtime's layout exists, what sandboxes of
// a template with a root filesystem are spawned with: its /etc and the
// bwrap binds of its top level; and checks the agent can run in it.
func (t *template) prepareRootfs(fs *jail.Layout) error {
	if t.rootfs == "" {
		return nil
	}
	if err := jail.AgentRunsIn(fs.AgentBin(), t.rootfs); err != nil {
		return fmt.Errorf("e2blocal: template %q: %w", t.id, err)
	}
	t.etcDir = fs.TemplateEtcDir(t.id)
	if err := jail.TemplateEtc(t.rootfs, t.etcDir); err != nil {
		return fmt.Errorf("e2blocal: template %q: %w", t.id, err)
	}
	binds, err := jail.RootfsBinds(t.rootfs)
	if err != nil {
		return fmt.Errorf("e2blocal: template %q: %w", t.id, err)
	}
	t.system = binds
	return nil
}

// sandboxEnv is the template's env vars under the create's, which win.
func (t template) sandboxEnv(create map[string]string) map[string]string {
	if len(t.envs) == 0 {
		return create
	}
	env := make(map[string]string, len(t.envs)+len(create))
	for k, v := range t.envs {
		env[k] = v
	}
	for k, v := range create {
		env[k] = v
	}
	return env
}
