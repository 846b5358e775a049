//go:build linux

package kernel

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	e := defaultEnv(t)
	resp, err := http.Get(e.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestExecuteLineTypes(t *testing.T) {
	e := defaultEnv(t)
	r := e.run(t, "import sys\nprint('out')\nsys.stderr.write('err\\n')\n1+1").mustNoError(t)
	if r.lines[0]["type"] != "number_of_executions" || r.count() != 1 {
		t.Errorf("first line %v, want number_of_executions 1", r.lines[0])
	}
	for _, typ := range []string{"stdout", "stderr"} {
		ls := r.ofType(typ)
		if len(ls) != 1 {
			t.Fatalf("%s lines: %v", typ, r.lines)
		}
		ts, _ := ls[0]["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("%s timestamp %q: %v", typ, ts, err)
		}
	}
	if got := r.text("stdout"); got != "out\n" {
		t.Errorf("stdout %q", got)
	}
	// A line written in pieces arrives whole, even when the flusher runs between
	// the pieces; an unterminated line still arrives while the cell runs.
	r2 := e.run(t, "import sys, time\nsys.stdout.write('a')\ntime.sleep(0.01)\nsys.stdout.write('b\\n')\nsys.stdout.write('tail')\ntime.sleep(0.6)\nsys.stdout.write('!')").mustNoError(t)
	var chunks []string
	for _, l := range r2.ofType("stdout") {
		chunks = append(chunks, l["text"].(string))
	}
	if strings.Join(chunks, "|") != "ab\n|tail|!" {
		t.Errorf("stdout chunks %q", chunks)
	}
	if got := r.text("stderr"); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
	m := r.mainResult()
	if m == nil || m["text"] != "2" {
		t.Fatalf("main result %v", m)
	}
	if len(r.ofType("result")) != 1 {
		t.Errorf("results: %v", r.ofType("result"))
	}
}

func TestMainResultSemantics(t *testing.T) {
	e := defaultEnv(t)
	cases := []struct {
		code     string
		want     string
		noResult bool
	}{
		{code: "'hello'", want: "hello"},
		{code: `"it's"`, want: "it's"},
		{code: "x = 3\nx * 14", want: "42"},
		{code: "None", noResult: true},
		{code: "print('a')", noResult: true},
		{code: "1+1;", noResult: true},
		{code: "y = 5", noResult: true},
		{code: "[1, 'a', {'k': (1, 2)}]", want: "[1, 'a', {'k': (1, 2)}]"},
		{code: "import asyncio\nawait asyncio.sleep(0)\n7", want: "7"},
		{code: "def f():\n    return 9\nf()", want: "9"},
		{code: "_", want: "9"},
		{code: "if True:\n    10", noResult: true},
	}
	for _, c := range cases {
		r := e.run(t, c.code).mustNoError(t)
		m := r.mainResult()
		if c.noResult {
			if m != nil {
				t.Errorf("%q: unexpected result %v", c.code, m)
			}
			continue
		}
		if m == nil || m["text"] != c.want {
			t.Errorf("%q: result %v, want text %q", c.code, m, c.want)
		}
	}
}

func TestStateAndCountAcrossCalls(t *testing.T) {
	e := defaultEnv(t)
	for i := 1; i <= 4; i++ {
		code := "n = 1"
		if i > 1 {
			code = "n += 1\nn"
		}
		r := e.run(t, code).mustNoError(t)
		if r.count() != i {
			t.Errorf("execution %d: count %d", i, r.count())
		}
		if i > 1 && r.mainText() != string(rune('0'+i)) {
			t.Errorf("execution %d: n = %q", i, r.mainText())
		}
	}
	r := e.run(t, "import os\nos.getcwd()").mustNoError(t)
	if r.mainText() != e.dir {
		t.Errorf("cwd %q, want %q", r.mainText(), e.dir)
	}
	if r := e.run(t, "__name__").mustNoError(t); r.mainText() != "__main__" {
		t.Errorf("__name__ = %q", r.mainText())
	}
}

func TestErrors(t *testing.T) {
	e := defaultEnv(t)
	e.run(t, "def boom():\n    raise ValueError('bad value')").mustNoError(t)
	cases := []struct {
		code, name, value string
		tbHas             []string
	}{
		{"1/0", "ZeroDivisionError", "division by zero", []string{"Traceback", "<cell-2>", "1/0"}},
		{"print('before')\nboom()", "ValueError", "bad value", []string{"<cell-1>", "raise ValueError", "boom()"}},
		{"undefined_name", "NameError", "name 'undefined_name' is not defined", []string{"NameError"}},
		{"def f(:\n  pass", "SyntaxError", "invalid syntax", []string{"<cell-5>", "def f(:"}},
		{"x = 1\n  y = 2", "IndentationError", "unexpected indent", []string{"IndentationError"}},
		{"raise SystemExit(3)", "SystemExit", "3", []string{"SystemExit"}},
		{"raise KeyError('k') from OSError('inner')", "KeyError", "'k'", []string{"OSError: inner", "direct cause"}},
	}
	for _, c := range cases {
		r := e.run(t, c.code)
		er := r.err()
		if er == nil {
			t.Errorf("%q: no error line: %v", c.code, r.lines)
			continue
		}
		if er["name"] != c.name || !strings.HasPrefix(er["value"].(string), c.value) {
			t.Errorf("%q: error %v: %v", c.code, er["name"], er["value"])
		}
		tb, ok := er["traceback"].(string)
		if !ok {
			t.Fatalf("%q: traceback is not one string: %T", c.code, er["traceback"])
		}
		for _, want := range c.tbHas {
			if !strings.Contains(tb, want) {
				t.Errorf("%q: traceback lacks %q:\n%s", c.code, want, tb)
			}
		}
		if strings.Contains(tb, "<stdin>") || strings.Contains(tb, "run_cell") {
			t.Errorf("%q: traceback shows kernel frames:\n%s", c.code, tb)
		}
	}
	if r := e.run(t, "'still alive'").mustNoError(t); r.mainText() != "still alive" {
		t.Errorf("after errors: %v", r.lines)
	}
}

func TestEnvVarsPerExecution(t *testing.T) {
	e := newTestEnv(t, Config{Env: []string{"BASE=base", "PATH=/usr/bin:/bin"}}, testTuning)
	r := e.exec(t, map[string]any{"code": "import os\nos.environ['FOO'] + os.environ['BASE']", "env_vars": map[string]string{"FOO": "bar", "BASE": "over"}})
	if r.mustNoError(t).mainText() != "barover" {
		t.Errorf("with env_vars: %v", r.lines)
	}
	r = e.run(t, "import os\n(os.environ.get('FOO'), os.environ['BASE'], os.environ['MPLBACKEND'])").mustNoError(t)
	if r.mainText() != "(None, 'base', 'Agg')" {
		t.Errorf("env_vars leaked into the next execution: %v", r.mainText())
	}
	r = e.run(t, "import subprocess\nprint(subprocess.run(['/bin/sh', '-c', 'echo $BASE'], capture_output=True, text=True).stdout, end='')").mustNoError(t)
	if r.text("stdout") != "base\n" {
		t.Errorf("subprocess env: %q", r.text("stdout"))
	}
}

func TestRawFdAndShell(t *testing.T) {
	e := defaultEnv(t)
	r := e.run(t, "import os\nprint('py1')\nos.system('echo from-shell; echo to-err >&2')\nprint('py2')\nos.write(1, b'raw-fd\\n')\nNone").mustNoError(t)
	if got := r.text("stdout"); got != "py1\nfrom-shell\npy2\nraw-fd\n" {
		t.Errorf("stdout %q", got)
	}
	if got := r.text("stderr"); got != "to-err\n" {
		t.Errorf("stderr %q", got)
	}
	r = e.run(t, "import subprocess\nfor i in range(3):\n    print('p%d' % i)\n    subprocess.run(['echo', 's%d' % i])\nprint('end')").mustNoError(t)
	if got := r.text("stdout"); got != "p0\ns0\np1\ns1\np2\ns2\nend\n" {
		t.Errorf("subprocess stdout %q", got)
	}
	r = e.run(t, "!echo bang\nx = 1\n%cd /\n%env SBX=1").mustNoError(t)
	if got := r.text("stdout"); got != "bang\n/\n" {
		t.Errorf("magics stdout %q", got)
	}
	if r := e.run(t, "import os\n(os.getcwd(), os.environ['SBX'])").mustNoError(t); r.mainText() != "('/', '1')" {
		t.Errorf("after magics: %q", r.mainText())
	}
	// Closing the real fds ends their capture instead of leaving it spinning
	// on EOF: the kernel's thread reading them exits.
	tasks := "len(os.listdir('/proc/self/task'))"
	before, err := strconv.Atoi(e.run(t, "import os\n"+tasks).mustNoError(t).mainText())
	if err != nil {
		t.Fatalf("thread count: %v", err)
	}
	e.run(t, "os.close(1)\nos.close(2)").mustNoError(t)
	r = e.run(t, fmt.Sprintf("import time\nd = time.time() + 10\nwhile %s >= %d and time.time() < d:\n    time.sleep(0.01)\nprint('still printing')\n%s", tasks, before, tasks)).mustNoError(t)
	if got := r.mainText(); got != strconv.Itoa(before-1) || r.text("stdout") != "still printing\n" {
		t.Errorf("after closing fds 1 and 2: %d threads before, %v", before, r.lines)
	}
}

func TestRichReprs(t *testing.T) {
	e := defaultEnv(t)
	code := `
class Rich:
    def _repr_html_(self): return '<b>rich</b>'
    def _repr_markdown_(self): return '**rich**'
    def _repr_svg_(self): return '<svg></svg>'
    def _repr_png_(self): return b'\x89PNG\r\n\x1a\nfake'
    def _repr_jpeg_(self): return None
    def _repr_json_(self): return {'k': [1, 2]}
    def _repr_latex_(self): return r'$x^2$'
    def _repr_javascript_(self): return 'alert(1)'
    def __repr__(self): return 'Rich()'

class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/plain': 'bundle', 'application/vnd.custom+json': {'a': 1}}

class Anything:
    def __getattr__(self, name): return lambda *a, **k: 'nope'
    def __repr__(self): return 'Anything()'

display(Bundle())
Rich()
`
	r := e.run(t, code).mustNoError(t)
	m := r.mainResult()
	if m == nil {
		t.Fatalf("no main result: %v", r.lines)
	}
	want := map[string]string{"text": "Rich()", "html": "<b>rich</b>", "markdown": "**rich**", "svg": "<svg></svg>", "latex": "$x^2$", "javascript": "alert(1)"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %q", k, m[k], v)
		}
	}
	if png, _ := base64.StdEncoding.DecodeString(m["png"].(string)); !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("png %v", m["png"])
	}
	if js, ok := m["json"].(map[string]any); !ok || js["k"] == nil {
		t.Errorf("json %v", m["json"])
	}
	if _, ok := m["jpeg"]; ok {
		t.Errorf("jpeg present although _repr_jpeg_ returned None")
	}
	var disp line
	for _, l := range r.ofType("result") {
		if l["is_main_result"] == false {
			disp = l
		}
	}
	if disp == nil || disp["text"] != "bundle" {
		t.Fatalf("display result %v", disp)
	}
	extra, _ := disp["extra"].(map[string]any)
	if c, _ := extra["application/vnd.custom+json"].(map[string]any); c["a"] != float64(1) {
		t.Errorf("extra %v", disp["extra"])
	}
	r = e.run(t, "Anything()").mustNoError(t)
	if m := r.mainResult(); m["text"] != "Anything()" || m["html"] != nil {
		t.Errorf("object answering every attribute: %v", m)
	}
	r = e.run(t, "from IPython.display import display, HTML, Markdown\ndisplay(HTML('<i>h</i>'), Markdown('# m'))").mustNoError(t)
	res := r.ofType("result")
	if len(res) != 2 || res[0]["html"] != "<i>h</i>" || res[1]["markdown"] != "# m" {
		t.Errorf("IPython.display: %v\n%v", res, r.lines)
	}
}

func TestDataFrame(t *testing.T) {
	e := defaultEnv(t)
	r := e.run(t, "import pandas as pd\npd.DataFrame({'alpha': [1, 2], 'beta': ['x', 'y']})").mustNoError(t)
	m := r.mainResult()
	if m == nil {
		t.Fatalf("no result: %v", r.lines)
	}
	text, _ := m["text"].(string)
	html, _ := m["html"].(string)
	if !strings.Contains(text, "alpha") || !strings.Contains(text, "beta") {
		t.Errorf("text %q", text)
	}
	if !strings.Contains(html, "<table") || !strings.Contains(html, "<th>alpha</th>") {
		t.Errorf("html %q", html)
	}
	jsonEq(t, "data", m["data"], `{"alpha": [1, 2], "beta": ["x", "y"]}`)
	// E2B's data: timestamps as ISO text, NaN as null, column names as text.
	r = e.run(t, "import numpy as np\npd.DataFrame({'when': pd.to_datetime(['2024-01-02', '2024-03-04 05:06:07']), 2: [1.5, np.nan]})").mustNoError(t)
	jsonEq(t, "data", r.mainResult()["data"], `{"when": ["2024-01-02T00:00:00", "2024-03-04T05:06:07"], "2": [1.5, null]}`)
	// Displayed frames carry it too; a Series (not a frame) has none.
	r = e.run(t, "display(pd.DataFrame({'a': [1]}))\npd.Series([1, 2])").mustNoError(t)
	res := r.ofType("result")
	if len(res) != 2 {
		t.Fatalf("results %v", res)
	}
	jsonEq(t, "displayed data", res[0]["data"], `{"a": [1]}`)
	if _, ok := res[1]["data"]; ok {
		t.Errorf("a Series got data: %v", res[1])
	}
}

func decodePNG(t *testing.T, l line) []byte {
	t.Helper()
	s, _ := l["png"].(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a base64 PNG: %.60q (%v)", s, err)
	}
	return b
}

func TestMatplotlib(t *testing.T) {
	e := defaultEnv(t)
	r := e.run(t, `
import matplotlib
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.show()
print('after show')
plt.figure()
plt.bar(['a', 'b'], [3, 4])
matplotlib.get_backend()
`).mustNoError(t)
	var figs []line
	for _, l := range r.ofType("result") {
		if l["is_main_result"] == false {
			figs = append(figs, l)
		}
	}
	if len(figs) != 2 {
		t.Fatalf("want 2 figures (show + left open), got %d: %v", len(figs), r.lines)
	}
	for _, f := range figs {
		decodePNG(t, f)
		if !strings.HasPrefix(f["text"].(string), "<Figure size") {
			t.Errorf("figure text %v", f["text"])
		}
	}
	if b := r.mainText(); !strings.EqualFold(b, "agg") {
		t.Errorf("backend %q", b)
	}
	if !strings.Contains(r.text("stdout"), "after show") {
		t.Errorf("stdout %q", r.text("stdout"))
	}
	r = e.run(t, "len(plt.get_fignums())").mustNoError(t)
	if r.mainText() != "0" || len(r.ofType("result")) != 1 {
		t.Errorf("figures not closed after the cell: %v", r.lines)
	}
	r = e.run(t, "fig, ax = plt.subplots()\nax.plot([0, 1])\nfig").mustNoError(t)
	if res := r.ofType("result"); len(res) != 1 || res[0]["is_main_result"] != true {
		t.Fatalf("figure as the value: %v", res)
	} else {
		decodePNG(t, res[0])
	}
}

// plainWriter hides the Flusher of the underlying ResponseWriter.
type plainWriter struct{ w http.ResponseWriter }

func (p plainWriter) Header() http.Header         { return p.w.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(code int)        { p.w.WriteHeader(code) }

func TestWriterWithoutFlush(t *testing.T) {
	e := defaultEnv(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.ServeHTTP(plainWriter{w}, r)
	}))
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/execute", "application/json", strings.NewReader(`{"code": "print('x')\n6*7"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := execResult{lines: parseLines(t, data)}
	if r.mustNoError(t).mainText() != "42" || r.text("stdout") != "x\n" {
		t.Errorf("without Flush: %v", r.lines)
	}
}

// TestUserSiteInstallImportable: a package installed with `pip install
// --user` while the kernel runs is importable in the same kernel, as after
// the install endpoint falls back to a user install.
func TestUserSiteInstallImportable(t *testing.T) {
	home := t.TempDir()
	env := newTestEnv(t, Config{Env: append(os.Environ(), "HOME="+home, "PYTHONUSERBASE=")}, testTuning)
	if r := env.run(t, "1"); r.mainText() != "1" {
		t.Fatalf("warm-up: %+v", r)
	}
	r := env.run(t, "import site, os\nusp = site.getusersitepackages()\nos.makedirs(usp, exist_ok=True)\nopen(os.path.join(usp, 'sbx_user_pkg.py'), 'w').write('VALUE = 41 + 1\\n')\nusp.startswith(os.environ['HOME'])")
	if r.mainText() != "True" {
		t.Fatalf("writing the module: %+v", r)
	}
	if r := env.run(t, "import sbx_user_pkg\nsbx_user_pkg.VALUE"); r.mainText() != "42" {
		t.Fatalf("import after a user install: %+v", r)
	}
}

// TestIndentedCells: the indentation every line of a cell shares is removed
// before compiling, as IPython does, so cells from indented template literals
// and triple-quoted strings run.
func TestIndentedCells(t *testing.T) {
	e := defaultEnv(t)
	cases := []struct {
		name, code, want, stdout string
	}{
		{name: "issue example", code: "\n    x = 1\n    x\n    ", want: "1"},
		{name: "tabs", code: "\tv = 2\n\tv * 3", want: "6"},
		{name: "nested block", code: "\n        def f(n):\n            return n + 1\n        f(41)\n", want: "42"},
		{name: "blank lines inside", code: "  a = 1\n\n  b = 2\n  a + b", want: "3"},
		{name: "leading blank lines only", code: "\n\n7 * 6", want: "42"},
		{name: "print", code: "\n    print('hi')\n", stdout: "hi\n"},
	}
	for _, c := range cases {
		r := e.run(t, c.code).mustNoError(t)
		if c.want != "" && r.mainText() != c.want {
			t.Errorf("%s: result %q, want %q (%v)", c.name, r.mainText(), c.want, r.lines)
		}
		if c.stdout != "" && r.text("stdout") != c.stdout {
			t.Errorf("%s: stdout %q, want %q", c.name, r.text("stdout"), c.stdout)
		}
	}
	// Lines indented less than the first keep failing as Python would.
	r := e.run(t, "    x = 1\n  y = 2")
	if er := r.err(); er == nil || er["name"] != "IndentationError" {
		t.Errorf("inconsistent indentation: %v", r.lines)
	}
}

// TestPILImages: PIL images shown or saved to a path are displayed as PNG
// results, as in E2B's template; no viewer program runs.
func TestPILImages(t *testing.T) {
	t.Parallel()
	e := defaultEnv(t)
	e.run(t, "from PIL import Image\nimport io\nimg = Image.new('RGB', (8, 4), 'red')").mustNoError(t)
	cases := []struct {
		name    string
		code    string
		results int
		main    bool
	}{
		{"show", "img.show()", 1, false},
		{"save to a path", "img.save('red.png')", 1, false},
		{"save to a file object", "img.save(io.BytesIO(), 'PNG')", 0, false},
		{"the cell's value", "img", 1, true},
		{"matplotlib savefig to a path", "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('fig.png')\nplt.close('all')", 0, false},
	}
	for _, c := range cases {
		r := e.run(t, c.code).mustNoError(t)
		res := r.ofType("result")
		if len(res) != c.results {
			t.Errorf("%s: %d results, want %d: %v", c.name, len(res), c.results, r.lines)
			continue
		}
		if stderr := r.text("stderr"); stderr != "" {
			t.Errorf("%s: stderr %q", c.name, stderr)
		}
		for _, l := range res {
			png := decodePNG(t, l)
			if len(png) < 40 || l["is_main_result"] != c.main {
				t.Errorf("%s: result %v", c.name, keys(l))
			}
			if !strings.Contains(l["text"].(string), "size=8x4") {
				t.Errorf("%s: text %q", c.name, l["text"])
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "red.png")); err != nil {
		t.Errorf("save to a path did not write the file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "fig.png")); err != nil {
		t.Errorf("savefig did not write the file: %v", err)
	}
}
