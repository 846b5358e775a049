//go:build linux

package kernel

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testNode = "/usr/bin/node"

func needNode(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(testNode); err != nil {
		t.Skip("no node at " + testNode)
	}
}

// jsContext creates a context of lang and returns its id.
func (e *testEnv) jsContext(t *testing.T, lang string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"language": lang}
	for k, v := range extra {
		body[k] = v
	}
	st, c, raw := e.createContext(t, body)
	if st != http.StatusOK {
		t.Fatalf("create %s context: %d %s", lang, st, raw)
	}
	return c.ID
}

// TestJSCells runs sequences of cells in one javascript (or typescript)
// context: state, await, results, streams and errors, as E2B's kernel has them.
func TestJSCells(t *testing.T) {
	t.Parallel()
	needNode(t)
	type cell struct {
		code           string
		stdout, stderr string
		result         string // main result text; "" for none
		errName        string
		errValue       string // substring of the error's value
	}
	cases := []struct {
		name  string
		lang  string
		cells []cell
	}{
		{"state across cells", "js", []cell{
			{code: "let a = 1; const b = 2; var c = 3; function f() { return a + b + c }; class K { v() { return 7 } }"},
			{code: "f()", result: "6"},
			{code: "new K().v() + a", result: "8"},
			{code: "a = 10; a", result: "10"},
		}},
		{"top-level await keeps declarations", "js", []cell{
			{code: "await Promise.resolve('Hello World!')", result: "Hello World!"},
			{code: "const x = await new Promise(r => setTimeout(() => r(41), 5)); let y = 1"},
			{code: "x + y", result: "42"},
			{code: "for (const i of [1, 2]) { await null; console.log(i) }", stdout: "1\n2\n"},
		}},
		{"last expression as the result", "js", []cell{
			{code: "'text'", result: "text"},
			{code: "({ a: 1, b: [1, 2] })", result: "{ a: 1, b: [ 1, 2 ] }"},
			{code: "{ a: 1 }", result: "{ a: 1 }"},
			{code: "null", result: "null"},
			{code: "let u = 1"},
			{code: "undefined"},
			{code: "[1, 'x']", result: "[ 1, 'x' ]"},
		}},
		{"console streams", "js", []cell{
			{code: `console.log("Hello World!")`, stdout: "Hello World!\n"},
			{code: `console.error("bad"); console.log({ k: 1 }); process.stdout.write("raw")`, stdout: "{ k: 1 }\nraw", stderr: "bad\n", result: "true"},
		}},
		{"esm imports", "js", []cell{
			{code: "\n    import { readFileSync } from 'fs'\n    console.log(typeof readFileSync)\n    ", stdout: "function\n"},
			{code: "import * as p from 'node:path'; import os, { EOL as nl } from 'os'\np.join('a', 'b') + typeof os.cpus + nl.length", result: "a/bfunction1"},
			{code: "import { readFileSync } from 'fs'; typeof readFileSync", result: "function"},
			{code: "require('path').basename('/x/y')", result: "y"},
		}},
		{"errors", "js", []cell{
			{code: "nope + 1", errName: "ReferenceError", errValue: "nope is not defined"},
			{code: "throw new TypeError('boom')", errName: "TypeError", errValue: "boom"},
			{code: "let = = 1", errName: "SyntaxError"},
			{code: "await Promise.reject(new RangeError('late'))", errName: "RangeError", errValue: "late"},
			{code: "throw 'str'", errName: "Error", errValue: "str"},
			{code: "1 + 1", result: "2"},
		}},
		{"typescript", "ts", []cell{
			{code: `const message: string = "Hello World!"; console.log(message)`, stdout: "Hello World!\n"},
			{code: "interface P { x: number }\nfunction sq(p: P): number { return p.x * p.x }\nsq({ x: 3 })", result: "9"},
			{code: "const n: number = await Promise.resolve(5); n as number", result: "5"},
			{code: "import type { Stats } from 'fs'; import { statSync } from 'fs'; let s: Stats = statSync('.'); s.isDirectory()", result: "true"},
			{code: "enum Color { Red, Green }\nclass Box<T> { constructor(private v: T) {} get(): T { return this.v } }\nnew Box<Color>(Color.Green).get()", result: "1"},
			{code: "const bad: = 1", errName: "SyntaxError", errValue: "Type expected"},
			{code: "message", result: "Hello World!"},
		}},
	}
	e := newTestEnv(t, Config{}, testTuning)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := e.jsContext(t, tc.lang, nil)
			for _, c := range tc.cells {
				r := e.runIn(t, id, c.code)
				if c.errName == "" {
					r.mustNoError(t)
				} else if er := r.err(); er == nil || er["name"] != c.errName || !strings.Contains(er["value"].(string), c.errValue) {
					t.Fatalf("%q: error %v, want %s containing %q", c.code, er, c.errName, c.errValue)
				}
				if got := r.text("stdout"); got != c.stdout {
					t.Errorf("%q: stdout %q, want %q", c.code, got, c.stdout)
				}
				if got := r.text("stderr"); got != c.stderr {
					t.Errorf("%q: stderr %q, want %q", c.code, got, c.stderr)
				}
				if got := r.mainText(); got != c.result {
					t.Errorf("%q: result %q, want %q (%s)", c.code, got, c.result, r.body)
				}
			}
		})
	}
}

// TestJSInterrupt: a cell's timeout interrupts a busy loop or a wait and the
// context keeps its state; a loop after the cell's first await cannot be
// interrupted, so its kernel is replaced after the grace period.
func TestJSInterrupt(t *testing.T) {
	t.Parallel()
	needNode(t)
	cases := []struct {
		name, code string
		restarted  bool
	}{
		{"busy loop", "while (true) {}", false},
		{"loop printing", "for (let i = 0; ; i++) { if (i % 1e6 === 0) console.log(i) }", false},
		{"pending promise", "await new Promise(() => {})", false},
		{"timer never firing", "await new Promise(r => setTimeout(r, 60000))", false},
		{"busy loop after await", "await null; while (true) {}", true},
		{"synchronous command", "require('child_process').execSync('sleep 30', { stdio: 'inherit' })", false},
	}
	e := newTestEnv(t, Config{}, testTuning)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := e.jsContext(t, "javascript", nil)
			e.runIn(t, id, "let kept = 'still here'").mustNoError(t)
			r := e.exec(t, map[string]any{"code": tc.code, "context_id": id, "timeout": 0.3})
			er := r.err()
			if er == nil || er["name"] != "TimeoutError" || er["timed_out"] != true || er["kernel_restarted"] != tc.restarted {
				t.Fatalf("timed out cell: %v (%s)", er, tail(r.body))
			}
			next := e.runIn(t, id, "typeof kept === 'undefined' ? 'gone' : kept").mustNoError(t)
			want := "still here"
			if tc.restarted {
				want = "gone"
			}
			if got := next.mainText(); got != want {
				t.Fatalf("after the interrupt: %q, want %q", got, want)
			}
		})
	}
}

// TestJSEnvAndCwd: the sandbox's variables reach javascript contexts; an
// execution's env_vars hold for that execution only, overriding the
// sandbox's; a context runs in its cwd.
func TestJSEnvAndCwd(t *testing.T) {
	t.Parallel()
	needNode(t)
	e := newTestEnv(t, Config{Env: append(os.Environ(), "TEST_ENV_VAR=supertest")}, testTuning)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		body map[string]any
		want string
	}{
		{"sandbox env", map[string]any{"code": "process.env.TEST_ENV_VAR", "language": "javascript"}, "supertest"},
		{"per execution", map[string]any{"code": "process.env.FOO", "language": "js", "env_vars": map[string]string{"FOO": "bar"}}, "bar"},
		{"gone after it", map[string]any{"code": "process.env.FOO || 'default'", "language": "js"}, "default"},
		{"overwrite", map[string]any{"code": "process.env.TEST_ENV_VAR", "language": "ts", "env_vars": map[string]string{"TEST_ENV_VAR": "overwrite"}}, "overwrite"},
		{"restored", map[string]any{"code": "process.env.TEST_ENV_VAR", "language": "ts"}, "supertest"},
		{"default cwd", map[string]any{"code": "process.cwd()", "language": "js"}, e.dir},
		{"ts cwd", map[string]any{"code": "process.cwd()", "language": "typescript"}, e.dir},
		{"context cwd", map[string]any{"code": "process.cwd()", "context_id": e.jsContext(t, "js", map[string]any{"cwd": sub})}, sub},
		{"relative require from cwd", map[string]any{"code": "require('fs').writeFileSync('m.js', 'module.exports = 5'); require('./m.js')", "context_id": e.jsContext(t, "js", map[string]any{"cwd": sub})}, "5"},
	}
	for _, tc := range cases { // in order: later cases see what earlier ones left
		r := e.exec(t, tc.body).mustNoError(t)
		if got := r.mainText(); got != tc.want {
			t.Errorf("%s: %q, want %q (%s)", tc.name, got, tc.want, tail(r.body))
		}
	}
}

// TestJSDefaultContext: as in E2B, the contexts listed from the start are
// python's and javascript's, and a context reports its language by its
// full name.
func TestJSDefaultContext(t *testing.T) {
	t.Parallel()
	needNode(t)
	e := newTestEnv(t, Config{}, testTuning)
	st, body := e.do(t, http.MethodGet, "/contexts")
	if st != http.StatusOK || !strings.Contains(body, `"language":"python"`) || !strings.Contains(body, `"language":"javascript"`) {
		t.Fatalf("list: %d %s", st, body)
	}
	for _, lang := range []string{"js", "JavaScript", "ts", "typescript"} {
		st, c, raw := e.createContext(t, map[string]any{"language": lang})
		want := map[bool]string{true: "javascript", false: "typescript"}[strings.HasPrefix(strings.ToLower(lang), "j")]
		if st != http.StatusOK || c.Language != want {
			t.Errorf("create %s: %d %s, want language %s", lang, st, raw, want)
		}
	}
	if st, _, raw := e.createContext(t, map[string]any{"language": "r"}); st != http.StatusBadRequest || !strings.Contains(raw, "javascript, typescript") {
		t.Errorf("create r: %d %s", st, raw)
	}
}

// TestJSMissingRuntime: without node, or without the type stripper, the
// context cannot start and says why; python's are unaffected.
func TestJSMissingRuntime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, lang string
		cfg        Config
		why        string
	}{
		{"no node", "js", Config{Node: "/nonexistent/node"}, "/nonexistent/node"},
		{"no typescript", "ts", Config{TypeScript: "/nonexistent/typescript"}, "typescript npm package"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEnv(t, tc.cfg, testTuning)
			if st, _, raw := e.createContext(t, map[string]any{"language": tc.lang}); st != http.StatusInternalServerError || !strings.Contains(raw, tc.why) {
				t.Errorf("create: %d %s, want 500 naming %q", st, raw, tc.why)
			}
			r := e.exec(t, map[string]any{"code": "1", "language": tc.lang})
			if er := r.err(); er == nil || er["name"] != "KernelStartError" || !strings.Contains(er["value"].(string), tc.why) {
				t.Errorf("execute: %s", r.body)
			}
			e.run(t, "1").mustNoError(t)
		})
	}
}

// TestRestartIdleContextStaysIdle: restarting a context whose kernel never
// started starts none (a session's reset restarts every context, the idle
// javascript default included); one with a kernel gets a fresh one.
func TestRestartIdleContextStaysIdle(t *testing.T) {
	t.Parallel()
	needNode(t)
	e := newTestEnv(t, Config{}, testTuning)
	js, err := e.srv.defaultContext(langJavaScript)
	if err != nil {
		t.Fatal(err)
	}
	py, err := e.srv.defaultContext(langPython)
	if err != nil {
		t.Fatal(err)
	}
	e.run(t, "x = 1").mustNoError(t)
	for _, c := range []*kctx{js, py} {
		if st, body := e.do(t, http.MethodPost, "/contexts/"+c.id+"/restart"); st != http.StatusOK {
			t.Fatalf("restart %s: %d %s", c.language, st, body)
		}
	}
	js.mu.Lock()
	idle := js.p == nil
	js.mu.Unlock()
	py.mu.Lock()
	fresh := py.p != nil
	py.mu.Unlock()
	if !idle || !fresh {
		t.Fatalf("after restart: javascript kernel idle=%v (want true), python kernel running=%v (want true)", idle, fresh)
	}
	if r := e.run(t, "x"); r.err() == nil || r.err()["name"] != "NameError" {
		t.Errorf("python state survived the restart: %s", r.body)
	}
	if r := e.exec(t, map[string]any{"code": "1 + 1", "language": "js"}).mustNoError(t); r.mainText() != "2" || r.count() != 1 {
		t.Errorf("javascript after restart: %s", r.body)
	}
}

// TestJSOutputBetweenCells: what a timer prints after its cell ended comes
// with the next cell, capped as a cell's output is.
func TestJSOutputBetweenCells(t *testing.T) {
	t.Parallel()
	needNode(t)
	e := newTestEnv(t, Config{MaxOutputBytes: 1000}, testTuning)
	id := e.jsContext(t, "js", nil)
	// The timer fires once the cell has ended (its end is written first).
	first := e.runIn(t, id, "setTimeout(() => { console.log('late'); for (let i = 0; i < 50; i++) console.log('x'.repeat(100)) }, 0); 1").mustNoError(t)
	if first.text("stdout") != "" {
		t.Fatalf("the cell itself printed %q", first.text("stdout"))
	}
	r := e.runIn(t, id, "await new Promise(r => setImmediate(r))").mustNoError(t)
	out := r.text("stdout")
	if !strings.HasPrefix(out, "late\n") || len(out) > 1000 {
		t.Errorf("stdout of the next cells: %.80q (%d bytes)", out, len(out))
	}
}

// TestJSChildProcessOutput: what a child process writes to the kernel's
// stdout and stderr (stdio 'inherit') is the cell's output, in order with
// what the cell prints around it, as E2B's kernel has it.
func TestJSChildProcessOutput(t *testing.T) {
	t.Parallel()
	needNode(t)
	cases := []struct {
		name, lang, code string
		stdout, stderr   string
		errName          string
	}{
		{"execSync inherit", "js", "console.log('before'); require('child_process').execSync('echo hi', { stdio: 'inherit' }); console.log('after')", "before\nhi\nafter\n", "", ""},
		{"stderr of a command", "js", "require('child_process').execSync('echo oops >&2', { stdio: 'inherit' }); console.error('then')", "", "oops\nthen\n", ""},
		{"spawnSync", "js", "require('child_process').spawnSync('printf', ['a\\nb'], { stdio: 'inherit' }); undefined", "a\nb", "", ""},
		{"spawn awaited", "js", "await new Promise(r => require('child_process').spawn('sh', ['-c', 'echo out; echo err >&2'], { stdio: 'inherit' }).on('close', r))", "out\n", "err\n", ""},
		{"fs.writeSync to fd 1", "js", "require('fs').writeSync(1, 'direct\\n'); require('fs').writeSync(2, 'e\\n'); undefined", "direct\n", "e\n", ""},
		{"before an error", "js", "require('child_process').execSync('echo first', { stdio: 'inherit' }); throw new Error('x')", "first\n", "", "Error"},
		{"multibyte split", "js", "require('child_process').execSync(\"printf '\\\\303'; sleep 0.05; printf '\\\\251\\\\n'\", { stdio: 'inherit' }); undefined", "é\n", "", ""},
		{"more than a pipe holds", "js", "require('child_process').execSync('yes abcdefghi | head -n 30000', { stdio: 'inherit' }); console.log('end')", strings.Repeat("abcdefghi\n", 30000) + "end\n", "", ""},
		{"exec callback", "js", "await new Promise(r => require('child_process').exec('echo via-exec; echo e >&2', (err, out) => { console.log('got ' + out.trim()); r() })); require('child_process').spawn('echo', ['inherited'], { stdio: 'inherit' }).on('exit', () => console.log('exited')); await new Promise(r => setTimeout(r, 300))", "got via-exec\ninherited\nexited\n", "", ""},
		{"a command that is not there", "js", "await new Promise(r => require('child_process').spawn('/no/such', { stdio: 'inherit' }).on('error', (e) => { console.log(e.code); r() }))", "ENOENT\n", "", ""},
		{"typescript", "ts", "import { execSync } from 'child_process'\nconst cmd: string = 'echo ts'\nexecSync(cmd, { stdio: 'inherit' }); console.log('done')", "ts\ndone\n", "", ""},
	}
	e := newTestEnv(t, Config{}, testTuning)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := e.jsContext(t, tc.lang, nil)
			r := e.runIn(t, id, tc.code)
			if tc.errName == "" {
				r.mustNoError(t)
			} else if er := r.err(); er == nil || er["name"] != tc.errName {
				t.Fatalf("error %v, want %s", er, tc.errName)
			}
			if got := r.text("stdout"); got != tc.stdout {
				t.Errorf("stdout %q, want %q (%s)", got, tc.stdout, tail(r.body))
			}
			if got := r.text("stderr"); got != tc.stderr {
				t.Errorf("stderr %q, want %q", got, tc.stderr)
			}
		})
	}
}

// TestJSRerunCells: a cell declaring top-level let, const or class can run
// again, as a notebook's user re-runs it; a const still cannot be assigned
// within the cell that declares it.
func TestJSRerunCells(t *testing.T) {
	t.Parallel()
	needNode(t)
	type cell struct{ code, result, errValue string }
	cases := []struct {
		name  string
		lang  string
		cells []cell
	}{
		{"const twice", "js", []cell{{code: "const x = 1"}, {code: "const x = 1"}, {code: "const x = 2; x", result: "2"}, {code: "x", result: "2"}}},
		{"let anew is reset", "js", []cell{{code: "let y = 5"}, {code: "let y, z = 1; [y, z]", result: "[ undefined, 1 ]"}}},
		{"class twice", "js", []cell{
			{code: "class A { v() { return 1 } }"}, {code: "class A { v() { return 2 } }"}, {code: "new A().v()", result: "2"},
		}},
		{"functions see the same binding", "js", []cell{
			{code: "let count = 0; function inc() { return ++count }"}, {code: "inc(); inc()", result: "2"}, {code: "count", result: "2"},
			{code: "let count = 10; inc()", result: "11"},
		}},
		{"destructuring", "js", []cell{
			{code: "const { a, b: [c], ...rest } = { a: 1, b: [2], d: 4 }"}, {code: "const { a, b: [c], ...rest } = { a: 1, b: [2], d: 4 }"},
			{code: "a + c + rest.d", result: "7"},
		}},
		{"with await", "js", []cell{
			{code: "const w = await Promise.resolve(1)"}, {code: "const w = await Promise.resolve(2); class B {}"}, {code: "w", result: "2"},
		}},
		{"const within its cell", "js", []cell{
			{code: "const k = 1; k = 2", errValue: "Assignment to constant variable."},
			{code: "const k2 = 1; k2++", errValue: "Assignment to constant variable."},
			{code: "const q = await 1; q += 1", errValue: "Assignment to constant variable."},
			{code: "const s = 1; function g(s) { s = 5; return s }; g(0)", result: "5"},
			{code: "const t = 1; { let t = 2; t = 3 }; t", result: "1"},
			{code: "t = 4; t", result: "4"},
		}},
		{"typescript", "ts", []cell{
			{code: "const n: number = 1"}, {code: "const n: number = 2"},
			{code: "class C { x: number = 1 }"}, {code: "class C { x: number = 3 }"},
			{code: "new C().x + n", result: "5"},
		}},
	}
	e := newTestEnv(t, Config{}, testTuning)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := e.jsContext(t, tc.lang, nil)
			for _, c := range tc.cells {
				r := e.runIn(t, id, c.code)
				if c.errValue != "" {
					if er := r.err(); er == nil || er["name"] != "TypeError" || er["value"] != c.errValue {
						t.Fatalf("%q: error %v, want TypeError %q", c.code, er, c.errValue)
					}
					continue
				}
				r.mustNoError(t)
				if got := r.mainText(); got != c.result {
					t.Fatalf("%q: result %q, want %q", c.code, got, c.result)
				}
			}
		})
	}
}
