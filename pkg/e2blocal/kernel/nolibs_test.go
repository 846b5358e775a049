//go:build linux

package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// blockLibs is a sitecustomize that makes numpy, pandas, matplotlib and IPython
// unimportable, as on a machine without them.
const blockLibs = `
import sys
class _Block:
    def find_spec(self, name, path, target=None):
        top = name.split('.')[0]
        if top == 'IPython':
            # Hide an installed IPython but let the kernel's own fallback answer.
            for f in sys.meta_path:
                if type(f).__name__ == '_ShimFinder':
                    return f.find_spec(name, path, target)
        if top in ('numpy', 'pandas', 'matplotlib', 'IPython'):
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return None
sys.meta_path.insert(0, _Block())
`

func TestWithoutScientificLibraries(t *testing.T) {
	site := t.TempDir()
	if err := os.WriteFile(filepath.Join(site, "sitecustomize.py"), []byte(blockLibs), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, Config{Env: []string{"PYTHONPATH=" + site, "PATH=/usr/bin:/bin"}}, testTuning)
	r := e.run(t, "import matplotlib")
	if er := r.err(); er == nil || er["name"] != "ModuleNotFoundError" {
		t.Fatalf("libraries not blocked: %v", r.lines)
	}
	r = e.run(t, "class P:\n    def _repr_html_(self): return '<p/>'\nprint('plain')\n{'a': [1, 2], 'b': P()}").mustNoError(t)
	m := r.mainResult()
	if r.text("stdout") != "plain\n" || m == nil || !strings.HasPrefix(m["text"].(string), "{'a': [1, 2], 'b': <") {
		t.Errorf("without libraries: %v", r.lines)
	}
	if r := e.run(t, "P()").mustNoError(t); r.mainResult()["html"] != "<p/>" {
		t.Errorf("rich repr without libraries: %v", r.lines)
	}
	r = e.run(t, "import IPython\nfrom IPython.display import display, HTML, Image\ndisplay(HTML('<i>shim</i>'), Image(data=b'\\x89PNG'))\nIPython.__version__").mustNoError(t)
	res := r.ofType("result")
	if len(res) != 3 || res[0]["html"] != "<i>shim</i>" || res[1]["png"] != "iVBORw==" || !strings.Contains(r.mainText(), "shim") {
		t.Errorf("IPython.display fallback: %v", r.lines)
	}
}

// TestPathInterpreter runs the kernel on the python3 first on PATH (here a
// pyenv build without numpy, pandas or matplotlib).
func TestPathInterpreter(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		py = testPython
	}
	e := newTestEnv(t, Config{Python: py}, testTuning)
	r := e.run(t, "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')\nsys.version_info[0]").mustNoError(t)
	if r.mainText() != "3" {
		t.Errorf("%s: %v", py, r.lines)
	}
	var order []string
	for _, l := range r.lines {
		if l["type"] == "stdout" || l["type"] == "stderr" {
			order = append(order, l["type"].(string)+":"+l["text"].(string))
		}
	}
	if strings.Join(order, "|") != "stdout:a\n|stderr:b\n|stdout:c\n" {
		t.Errorf("stream order %q", order)
	}
	if r := e.run(t, "1/0"); r.err() == nil || r.err()["name"] != "ZeroDivisionError" {
		t.Errorf("%s error: %v", py, r.lines)
	}
}
