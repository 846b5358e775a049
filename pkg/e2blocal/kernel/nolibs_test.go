package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// blockLibs is a sitecustomize that makes numpy, pandas and matplotlib unimportable,
// as on a machine without them.
const blockLibs = `
import sys
class _Block:
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('numpy', 'pandas', 'matplotlib'):
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
}
