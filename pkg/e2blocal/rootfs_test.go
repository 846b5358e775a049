//go:build linux

package e2blocal

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tinyRootfs builds a root filesystem in a fresh directory every uid can
// reach: the host's bash, dash (as /bin/sh), sleep and cat with the
// libraries ldd names (and those of the agent, this test binary), laid out
// merged-usr as Debian is, plus a marker file, an /etc and an /opt of its
// own. It returns the template directory; the rootfs is its "rootfs".
func tinyRootfs(t *testing.T, withShell bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "template-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"usr/bin", "usr/lib", "usr/lib64", "etc", "opt/tool", "var/lib"} {
		mustMkdir(t, filepath.Join(root, d))
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	agentExe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{"/usr/bin/sleep": "/usr/bin/sleep", "/usr/bin/cat": "/usr/bin/cat"}
	if withShell {
		bins["/usr/bin/bash"], bins["/usr/bin/sh"] = "/bin/bash", "/bin/sh"
	}
	libs := map[string]bool{}
	for inside, host := range bins {
		copyHostFile(t, host, filepath.Join(root, inside))
		for _, l := range lddPaths(t, host) {
			libs[l] = true
		}
	}
	for _, l := range lddPaths(t, agentExe) {
		libs[l] = true
	}
	for l := range libs {
		copyHostFile(t, l, filepath.Join(root, l))
	}
	writeFile(t, filepath.Join(root, "marker"), "template-marker\n")
	writeFile(t, filepath.Join(root, "etc/os-release"), "ID=tiny\n")
	writeFile(t, filepath.Join(root, "etc/passwd"), "tiny:x:0:0::/:/bin/sh\n")
	writeFile(t, filepath.Join(root, "opt/tool/VERSION"), "1.2.3\n")
	writeFile(t, filepath.Join(root, "var/lib/state"), "kept\n")
	return dir
}

var lddPath = regexp.MustCompile(`(?m)(/\S+) \(0x`)

// lddPaths lists the libraries and loader a dynamic executable needs,
// none for a static one.
func lddPaths(t *testing.T, exe string) []string {
	t.Helper()
	out, _ := exec.Command("ldd", exe).Output() // "not a dynamic executable" exits 1
	var paths []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		paths = append(paths, m[1])
	}
	return paths
}

func copyHostFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Dir(dst))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeDef writes a template definition file into dir and returns its path.
func writeDef(t *testing.T, dir string, def map[string]any) string {
	t.Helper()
	data, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "template.json")
	writeFile(t, p, string(data))
	return p
}

// TestTemplateRootfs: a sandbox of a template with its own root filesystem
// sees that filesystem (its marker, its /etc/os-release, its /opt and
// /var), not the host's system directories, and cannot change it, not even
// as root; the template's start command has run, with the template's env
// vars, in its workdir, and its ready command held the create until the
// start command's file was there; commands default to the workdir and see
// the template's env vars under the create's.
func TestTemplateRootfs(t *testing.T) {
	t.Parallel()
	dir := tinyRootfs(t, true)
	// With root in the sandbox, the start command runs as the template's
	// user root.
	user, uid := "user", "1000"
	if os.Geteuid() == 0 {
		user, uid = "root", "0"
	}
	def := writeDef(t, dir, map[string]any{
		"rootfs":   "rootfs",
		"startCmd": `sleep 0.3; echo "$GREETING from $(cat /marker) as $EUID" > started; exec sleep 600`,
		"readyCmd": "[ -s started ]",
		"envs":     map[string]string{"GREETING": "hello", "WHO": "template"},
		"workdir":  "/home/user/app",
		"user":     user,
	})
	rt := startRuntime(t, Config{WarmPool: -1, Templates: map[string]string{"tiny": def}})
	sb := createSandbox(t, rt, map[string]any{"templateID": "tiny", "envVars": map[string]string{"WHO": "create"}})
	// No polling: the ready command made the create wait for the file.
	if got := mustRun(t, rt, sb, "cat /home/user/app/started"); got != "hello from template-marker as "+uid+"\n" {
		t.Errorf("start command's file: %q", got)
	}
	checks := []struct{ script, want string }{
		{"cat /marker", "template-marker\n"},
		{"cat /etc/os-release", "ID=tiny\n"},
		{"cat /opt/tool/VERSION /var/lib/state", "1.2.3\nkept\n"},
		// The host's system directories are not there: no python3, no apt.
		{"for f in /usr/bin/python3 /usr/bin/apt /usr/bin/ls; do [ -e $f ] && echo host $f; done; echo ok", "ok\n"},
		{"pwd; echo $GREETING $WHO", "/home/user/app\nhello create\n"},
		{"[ -x /opt/e2b/agent ] && echo agent", "agent\n"},
		// The home stays writable.
		{"echo x > ~/f && cat ~/f", "x\n"},
		// The runtime's accounts, over the template's own /etc.
		{"while IFS=: read n _; do echo $n; done < /etc/passwd", "root\nuser\nnobody\n"},
	}
	for _, c := range checks {
		if got := mustRun(t, rt, sb, c.script); got != c.want {
			t.Errorf("%s: %q, want %q", c.script, got, c.want)
		}
	}
	users := []string{"user"}
	if os.Geteuid() == 0 {
		users = append(users, "root")
	}
	for _, u := range users {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r := runCmd(ctx, rt, sb, u, "echo changed > /marker || echo refused; : > /usr/bin/new || echo refused; mkdir /newdir || echo refused", func() {})
		cancel()
		if r.err != nil || strings.Count(r.stdout, "refused") != 3 {
			t.Errorf("as %s, writes to the rootfs: %q %q %v", u, r.stdout, r.stderr, r.err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "rootfs/marker")); err != nil || string(data) != "template-marker\n" {
		t.Errorf("template's marker: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rootfs/usr/bin/new")); err == nil {
		t.Error("a sandbox wrote into the template's rootfs")
	}
	// The base template still runs the host's system directories, and an
	// unknown template is still E2B's 404.
	base := createSandbox(t, rt, map[string]any{"templateID": "base"})
	if got := mustRun(t, rt, base, "[ -e /marker ] || [ ! -e /usr/bin/ls ] || echo host"); got != "host\n" {
		t.Errorf("base sandbox: %q", got)
	}
	assertErrorBody(t, api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "tinyy"}), http.StatusNotFound)
}

// TestTemplateReadyTimeout: a ready command that never succeeds fails the
// create within the start timeout, naming the ready command's failure,
// and leaves no sandbox behind.
func TestTemplateReadyTimeout(t *testing.T) {
	t.Parallel()
	dir := tinyRootfs(t, true)
	def := writeDef(t, dir, map[string]any{"rootfs": "rootfs", "readyCmd": "echo not yet; exit 3"})
	rt := startRuntime(t, Config{WarmPool: -1, StartTimeout: 2 * time.Second, Templates: map[string]string{"never": def}})
	r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "never"})
	assertErrorBody(t, r, http.StatusInternalServerError)
	if !strings.Contains(string(r.body), "template 'never': its ready command did not succeed") {
		t.Errorf("create: %s", r.body)
	}
	rt.mu.Lock()
	n := len(rt.sandboxes)
	rt.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sandboxes after a failed create", n)
	}
}

// TestTemplateDefinitionRefused: a definition the runtime cannot honour is
// refused when the runtime starts, naming the template and the problem.
func TestTemplateDefinitionRefused(t *testing.T) {
	t.Parallel()
	noShell := tinyRootfs(t, false)
	withShell := tinyRootfs(t, true)
	file := filepath.Join(withShell, "rootfs", "marker")
	cases := []struct {
		name string
		dir  string
		def  map[string]any
		want string
	}{
		{"missing rootfs", withShell, map[string]any{"rootfs": "nope"}, "rootfs " + filepath.Join(withShell, "nope") + " does not exist"},
		{"rootfs is a file", withShell, map[string]any{"rootfs": file}, "is not a directory"},
		{"start command without a shell", noShell, map[string]any{"rootfs": "rootfs", "startCmd": "true"}, "/bin/sh is missing"},
		{"ready command without a shell", noShell, map[string]any{"rootfs": "rootfs", "readyCmd": "true"}, "/bin/sh is missing"},
		{"interpreter without Python", withShell, map[string]any{"rootfs": "rootfs", "builtin": TemplateCodeInterpreter}, "needs Python"},
		{"unknown builtin", withShell, map[string]any{"builtin": "ubuntu"}, `builtin "ubuntu" is not one of`},
		{"misspelt field", withShell, map[string]any{"start_cmd": "true"}, `unknown field "start_cmd"`},
		{"unknown user", withShell, map[string]any{"user": "admin"}, `user "admin"`},
		{"relative workdir", withShell, map[string]any{"workdir": "app"}, "clean absolute path"},
		{"workdir not in rootfs", withShell, map[string]any{"rootfs": "rootfs", "workdir": "/srv/app"}, "workdir /srv/app is not in rootfs"},
		{"workdir outside the home without rootfs", withShell, map[string]any{"workdir": "/srv/app"}, "must be in the template's rootfs"},
		{"bad env var", withShell, map[string]any{"envs": map[string]string{"A=B": "c"}}, `bad variable "A=B"`},
	}
	if os.Geteuid() == 0 {
		// t.TempDir's parent is 0700: bwrap, as a sandbox uid, could not
		// open it.
		hidden := t.TempDir()
		cases = append(cases, struct {
			name string
			dir  string
			def  map[string]any
			want string
		}{"rootfs unreachable by sandbox uids", withShell, map[string]any{"rootfs": hidden}, "not reachable by sandbox uids"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, _ := json.Marshal(c.def)
			// Relative rootfs paths resolve against the file's directory.
			def := filepath.Join(c.dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			writeFile(t, def, string(data))
			_, err := newTemplateSet(map[string]string{"mine": def}, "/usr/bin/python3")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `template "mine"`) {
				t.Errorf("err %v, want %q", err, c.want)
			}
		})
	}
	if _, err := newTemplateSet(map[string]string{"mine": "/nonexistent/t.json"}, ""); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing definition file: %v", err)
	}
	// A well-formed definition passes.
	good := writeDef(t, withShell, map[string]any{"rootfs": "rootfs", "startCmd": "true", "workdir": "/opt/tool"})
	if _, err := newTemplateSet(map[string]string{"mine": good}, ""); err != nil {
		t.Errorf("good definition: %v", err)
	}
}
