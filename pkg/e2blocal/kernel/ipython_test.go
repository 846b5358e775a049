//go:build linux

package kernel

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeIPython is a small IPython package laid out as IPython 8 lays out its
// display: display() lives in IPython.core.display_functions and prints
// reprs outside a shell, IPython.display re-exports it, and taking
// `display` from IPython.core.display goes through a module __getattr__
// that warns DeprecationWarning, as Debian's python3-ipython does.
var fakeIPython = map[string]string{
	"IPython/__init__.py": `__version__ = "8.99.0-fake"
from .core.getipython import get_ipython
from . import display
`,
	"IPython/core/__init__.py":   "",
	"IPython/core/getipython.py": "def get_ipython():\n    return None\n",
	"IPython/core/display_functions.py": `def display(*objs, **kwargs):
    print(*[repr(o) for o in objs])

def clear_output(wait=False):
    pass
`,
	"IPython/core/display.py": `from warnings import warn
from . import display_functions

class HTML:
    def __init__(self, data=None):
        self.data = data
    def _repr_html_(self):
        return self.data

_deprecated_names = ["display", "clear_output"]

def __getattr__(name):
    if name in _deprecated_names:
        warn(f"Importing {name} from IPython.core.display is deprecated since IPython 7.14, please import from IPython.display",
             DeprecationWarning, stacklevel=2)
        return getattr(display_functions, name)
    raise AttributeError(f"module {__name__} has no attribute {name}")
`,
	"IPython/display.py": `from IPython.core.display_functions import *
from IPython.core.display import HTML
`,
}

// TestHostIPython: with an IPython importable, as on a host whose Python
// has Debian's python3-ipython, and even imported before the kernel starts
// (a host sitecustomize), the kernel's display wins and the kernel's own
// patching writes nothing to a cell's stderr: PIL's show() (whose
// ImageShow imports IPython.display) gives the image as a result, and
// IPython's display() gives results, not printed reprs.
func TestHostIPython(t *testing.T) {
	t.Parallel()
	for _, preload := range []bool{false, true} {
		t.Run(map[bool]string{false: "importable", true: "imported at start"}[preload], func(t *testing.T) {
			t.Parallel()
			site := t.TempDir()
			files := maps.Clone(fakeIPython)
			if preload {
				files["sitecustomize.py"] = "import IPython.display\n"
			}
			for name, src := range files {
				p := filepath.Join(site, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e := newTestEnv(t, Config{Env: []string{"PYTHONPATH=" + site, "PATH=/usr/bin:/bin"}}, testTuning)
			checkHostIPython(t, e)
		})
	}
}

func checkHostIPython(t *testing.T, e *testEnv) {
	t.Helper()
	cases := []struct {
		name, code string
		check      func(line) bool
	}{
		{"PIL show", "from PIL import Image\nImage.new('RGB', (8, 4), 'red').show()", func(l line) bool { return l["png"] != nil }},
		{"IPython.display", "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))", func(l line) bool { return l["html"] == "<b>x</b>" }},
		{"IPython.core.display_functions", "from IPython.core import display_functions\ndisplay_functions.display(HTML('<i>y</i>'))", func(l line) bool { return l["html"] == "<i>y</i>" }},
	}
	for _, c := range cases {
		r := e.run(t, c.code).mustNoError(t)
		res := r.ofType("result")
		if len(res) != 1 || !c.check(res[0]) {
			t.Errorf("%s: results %v", c.name, r.lines)
		}
		if s := r.text("stderr") + r.text("stdout"); s != "" {
			t.Errorf("%s: output %q", c.name, s)
		}
	}
	if r := e.run(t, "import IPython\nIPython.__version__").mustNoError(t); !strings.Contains(r.mainText(), "fake") {
		t.Errorf("the fake IPython is not the one imported: %v", r.lines)
	}
}
