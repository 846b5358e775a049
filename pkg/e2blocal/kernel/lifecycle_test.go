//go:build linux

package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitFile is Python that waits (bounded) for a file the test creates.
func waitFile(path string) string {
	return fmt.Sprintf("import os, time\n_d = time.time() + 20\nwhile not os.path.exists(%q):\n    if time.time() > _d: raise TimeoutError('test never created the file')\n    time.sleep(0.005)\n", path)
}

func TestLiveStreaming(t *testing.T) {
	e := defaultEnv(t)
	gate := filepath.Join(e.dir, "gate")
	code := "print('first')\n" + waitFile(gate) + "print('second')"
	s := e.open(t, context.Background(), map[string]any{"code": code})
	defer s.close()
	seen := s.until(t, "stdout")
	if got := seen[len(seen)-1]["text"]; got != "first\n" {
		t.Fatalf("first stdout %v", got)
	}
	// The cell is still blocked on the gate, so "first" was streamed live.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest := s.until(t, "end_of_execution")
	var out strings.Builder
	for _, l := range rest {
		if l["type"] == "stdout" {
			out.WriteString(l["text"].(string))
		}
		if l["type"] == "error" {
			t.Fatalf("error: %v", l)
		}
	}
	if out.String() != "second\n" {
		t.Errorf("rest of stdout %q", out.String())
	}
}

func TestKeepalive(t *testing.T) {
	e := newTestEnv(t, Config{}, tuning{keepalive: 20 * time.Millisecond, grace: 2 * time.Second, startTimeout: 30 * time.Second})
	r := e.run(t, "import time\ntime.sleep(0.3)\n'done'").mustNoError(t)
	if len(r.ofType("keepalive")) == 0 {
		t.Errorf("no keepalive while the cell ran: %v", r.lines)
	}
	if r.lines[len(r.lines)-1]["type"] != "end_of_execution" {
		t.Errorf("last line %v", r.lines[len(r.lines)-1])
	}
}

func TestInterruptOnDisconnect(t *testing.T) {
	e := defaultEnv(t)
	marker := filepath.Join(e.dir, "interrupted")
	code := fmt.Sprintf("a = 41\nimport time\ntry:\n    while True:\n        time.sleep(0.01)\nexcept KeyboardInterrupt:\n    open(%q, 'w').close()\n    raise", marker)
	ctx, cancel := context.WithCancel(context.Background())
	s := e.open(t, ctx, map[string]any{"code": code})
	s.until(t, "number_of_executions")
	cancel()
	s.close()
	// The next execution waits for the interrupted cell, then sees its state.
	r := e.run(t, "a + 1").mustNoError(t)
	if r.mainText() != "42" {
		t.Fatalf("after disconnect: %v", r.lines)
	}
	if r.count() != 2 {
		t.Errorf("count %d: the kernel was restarted instead of interrupted", r.count())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("cell did not see KeyboardInterrupt: %v", err)
	}
}

func TestTimeoutInterrupts(t *testing.T) {
	e := defaultEnv(t)
	e.run(t, "kept = 'yes'").mustNoError(t)
	r := e.exec(t, map[string]any{"code": "import time\nprint('before', flush=True)\ntime.sleep(30)", "timeout": 0.2})
	er := r.err()
	if er == nil || er["name"] != "TimeoutError" || !strings.Contains(er["traceback"].(string), "KeyboardInterrupt") {
		t.Fatalf("timeout error %v", r.lines)
	}
	if er["timed_out"] != true || er["kernel_restarted"] != false || !strings.Contains(er["value"].(string), "exceeded its timeout of 0.2 s") {
		t.Errorf("timeout line %v", er)
	}
	if got := r.text("stdout"); got != "before\n" {
		t.Errorf("output before the timeout: %q", got)
	}
	// A cell that catches the interrupt and ends quietly still timed out.
	r = e.exec(t, map[string]any{"code": "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('caught')", "timeout": 0.2})
	if er := r.err(); er == nil || er["name"] != "TimeoutError" || er["timed_out"] != true || r.text("stdout") != "caught\n" {
		t.Errorf("quiet interrupted cell: %v", r.lines)
	}
	if r := e.run(t, "kept").mustNoError(t); r.mainText() != "yes" || r.count() != 4 {
		t.Errorf("after timeout: %v", r.lines)
	}
	// A cell that swallows interrupts is stopped by killing its kernel.
	stubborn := "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass"
	e2 := newTestEnv(t, Config{ExecTimeout: 200 * time.Millisecond}, tuning{keepalive: time.Second, grace: 300 * time.Millisecond, startTimeout: 30 * time.Second})
	r = e2.run(t, stubborn)
	if er := r.err(); er == nil || er["name"] != "TimeoutError" || er["kernel_restarted"] != true || !strings.Contains(er["value"].(string), "state is gone") {
		t.Fatalf("stubborn cell: %v", r.lines)
	}
	if r := e2.run(t, "'fresh'").mustNoError(t); r.mainText() != "fresh" || r.count() != 1 {
		t.Errorf("after kill: %v", r.lines)
	}
}

func TestInterruptReportsKeyboardInterrupt(t *testing.T) {
	e := defaultEnv(t)
	s := e.open(t, context.Background(), map[string]any{"code": "import time\nprint('go', flush=True)\ntime.sleep(30)"})
	defer s.close()
	s.until(t, "stdout")
	c, err := e.srv.defaultContext(langPython)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	p.interrupt()
	lines := s.until(t, "end_of_execution")
	var er line
	for _, l := range lines {
		if l["type"] == "error" {
			er = l
		}
	}
	if er == nil || er["name"] != "KeyboardInterrupt" || !strings.Contains(er["traceback"].(string), "<cell-1>") {
		t.Errorf("interrupt error %v", lines)
	}
	if r := e.run(t, "'usable'").mustNoError(t); r.mainText() != "usable" || r.count() != 2 {
		t.Errorf("after interrupt: %v", r.lines)
	}
}

type ctxJSON struct {
	ID, Language, Cwd string
}

func (e *testEnv) createContext(t *testing.T, body any) (int, ctxJSON, string) {
	t.Helper()
	resp, err := e.post(context.Background(), "/contexts", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var c ctxJSON
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("context body %q: %v", data, err)
		}
	}
	return resp.StatusCode, c, string(data)
}

func (e *testEnv) do(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func TestContextsCRUD(t *testing.T) {
	e := defaultEnv(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	st, a, body := e.createContext(t, map[string]any{"cwd": sub})
	if st != http.StatusOK || a.ID == "" || a.Language != "python" || a.Cwd != sub {
		t.Fatalf("create: %d %s", st, body)
	}
	st, b, body := e.createContext(t, map[string]any{"language": "Python"})
	if st != http.StatusOK || b.Cwd != e.dir || b.Language != "python" {
		t.Fatalf("create default cwd: %d %s", st, body)
	}
	st, body = e.do(t, http.MethodGet, "/contexts")
	var list []ctxJSON
	if err := json.Unmarshal([]byte(body), &list); err != nil || st != http.StatusOK {
		t.Fatalf("list: %d %s", st, body)
	}
	ids := map[string]bool{}
	for _, c := range list {
		ids[c.ID] = true
	}
	if len(list) != 4 || !ids[a.ID] || !ids[b.ID] { // with the default python and javascript contexts
		t.Errorf("list %v", list)
	}

	// Isolation: each context has its own variables, cwd and count.
	e.runIn(t, a.ID, "v = 'a'").mustNoError(t)
	if r := e.runIn(t, b.ID, "v"); r.err() == nil || r.err()["name"] != "NameError" {
		t.Errorf("variable leaked between contexts: %v", r.lines)
	}
	if r := e.runIn(t, a.ID, "import os\n(v, os.getcwd())").mustNoError(t); r.mainText() != fmt.Sprintf("('a', '%s')", sub) || r.count() != 2 {
		t.Errorf("context a: %v", r.lines)
	}
	if r := e.run(t, "'default'").mustNoError(t); r.count() != 1 {
		t.Errorf("default context count %d", r.count())
	}

	if st, body := e.do(t, http.MethodDelete, "/contexts/"+a.ID); st != http.StatusOK || strings.TrimSpace(body) != "null" {
		t.Errorf("delete: %d %q", st, body)
	}
	if r := e.exec(t, map[string]any{"code": "1", "context_id": a.ID}); r.status != http.StatusNotFound || r.body != "Context "+a.ID+" not found" {
		t.Errorf("execute on deleted: %d %q", r.status, r.body)
	}
	if st, _ := e.do(t, http.MethodDelete, "/contexts/"+a.ID); st != http.StatusNotFound {
		t.Errorf("second delete: %d", st)
	}
	if st, _ := e.do(t, http.MethodPost, "/contexts/"+a.ID+"/restart"); st != http.StatusNotFound {
		t.Errorf("restart deleted: %d", st)
	}
}

func TestCreateContextErrors(t *testing.T) {
	e := defaultEnv(t)
	cases := []struct {
		name string
		body any
		want int
	}{
		{"r", map[string]any{"language": "r"}, http.StatusBadRequest},
		{"missing cwd", map[string]any{"cwd": "/does/not/exist"}, http.StatusBadRequest},
		{"file as cwd", map[string]any{"cwd": "/etc/hostname"}, http.StatusBadRequest},
		{"bad json", "{", http.StatusUnprocessableEntity},
		{"bad type", map[string]any{"language": 3}, http.StatusUnprocessableEntity},
	}
	for _, c := range cases {
		st, _, body := e.createContext(t, c.body)
		if st != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, st, body, c.want)
		}
	}
	if st, _, body := e.createContext(t, nil); st != http.StatusOK {
		t.Errorf("empty body: %d %s", st, body)
	}
	// The refusals name the path and the reason.
	for path, why := range map[string]string{"/does/not/exist": "does not exist", "/etc/hostname": "is not a directory"} {
		_, _, body := e.createContext(t, map[string]any{"cwd": path})
		if !strings.Contains(body, path) || !strings.Contains(body, why) {
			t.Errorf("cwd %s: %q", path, body)
		}
	}
	bad := newTestEnv(t, Config{Python: "/nonexistent/python3"}, testTuning)
	if st, _, _ := bad.createContext(t, nil); st != http.StatusInternalServerError {
		t.Errorf("missing interpreter: %d", st)
	}
	r := bad.run(t, "1")
	if er := r.err(); er == nil || er["name"] != "KernelStartError" {
		t.Errorf("execute with missing interpreter: %v", r.lines)
	}
}

func TestRestart(t *testing.T) {
	e := defaultEnv(t)
	_, c, _ := e.createContext(t, nil)
	e.runIn(t, c.ID, "gone = 1").mustNoError(t)
	if st, body := e.do(t, http.MethodPost, "/contexts/"+c.ID+"/restart"); st != http.StatusOK || strings.TrimSpace(body) != "null" {
		t.Fatalf("restart: %d %s", st, body)
	}
	r := e.runIn(t, c.ID, "gone")
	if r.err() == nil || r.err()["name"] != "NameError" || r.count() != 1 {
		t.Errorf("after restart: %v", r.lines)
	}
}

func TestDeadKernelRecovery(t *testing.T) {
	e := defaultEnv(t)
	cases := []struct{ code, status string }{
		{"import os\nos._exit(3)", "exit status 3"},
		{"import ctypes\nctypes.string_at(0)", "killed by signal segmentation fault"},
		{"import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "killed by signal killed"},
	}
	for _, c := range cases {
		e.run(t, "x = 1").mustNoError(t)
		r := e.run(t, c.code)
		er := r.err()
		if er == nil || er["name"] != "DeadKernelError" || !strings.Contains(er["value"].(string), c.status) {
			t.Errorf("%q: %v", c.code, r.lines)
		}
		r = e.run(t, "'x' in globals()").mustNoError(t)
		if r.mainText() != "False" || r.count() != 1 {
			t.Errorf("after %q: %v", c.code, r.lines)
		}
	}
	// A kernel that closes its own event pipe is replaced as well.
	r := e.run(t, "import os\nos.close(4)\n1")
	if er := r.err(); er == nil || er["name"] != "DeadKernelError" {
		t.Errorf("closed event pipe: %v", r.lines)
	}
	if r := e.run(t, "2").mustNoError(t); r.mainText() != "2" {
		t.Errorf("after closed pipe: %v", r.lines)
	}
}

func TestOutputCap(t *testing.T) {
	const capBytes = 4096
	e := newTestEnv(t, Config{MaxOutputBytes: capBytes}, testTuning)
	cases := []struct{ name, code, stream string }{
		{"print flood", "for i in range(200000):\n    print('y' * 100)", "stdout"},
		{"raw fd flood", "import os\nfor i in range(2000):\n    os.write(1, b'z' * 1000)", "stdout"},
		{"stderr flood", "import sys\nfor i in range(100000):\n    sys.stderr.write('e' * 50)", "stderr"},
		{"shell flood", "!yes | head -c 3000000", "stdout"},
	}
	for _, c := range cases {
		r := e.run(t, c.code).mustNoError(t)
		got := r.text(c.stream)
		if c.stream == "stderr" {
			got = strings.Split(got, "[sessionbox]")[0]
		}
		if len(got) > capBytes || len(got) < capBytes/2 {
			t.Errorf("%s: %d bytes of %s", c.name, len(got), c.stream)
		}
		if !strings.Contains(r.text("stderr"), "[sessionbox] "+c.stream+" exceeded") {
			t.Errorf("%s: no truncation note", c.name)
		}
	}
	r := e.run(t, "list(range(10**6))").mustNoError(t)
	if text := r.mainText(); len(text) != capBytes+3 || !strings.HasPrefix(text, "[0, 1, 2") || !strings.HasSuffix(text, "...") {
		t.Errorf("huge result text: %d bytes", len(text))
	}
	if r := e.run(t, "print('ok')").mustNoError(t); r.text("stdout") != "ok\n" {
		t.Errorf("cap not reset per execution: %v", r.lines)
	}
}

func TestBadInput(t *testing.T) {
	e := defaultEnv(t)
	cases := []struct {
		name   string
		body   any
		status int
		text   string
	}{
		{"invalid json", "{not json", http.StatusUnprocessableEntity, ""},
		{"empty body", "", http.StatusUnprocessableEntity, ""},
		{"missing code", map[string]any{"language": "python"}, http.StatusUnprocessableEntity, ""},
		{"code not a string", map[string]any{"code": 5}, http.StatusUnprocessableEntity, ""},
		{"bad env name", map[string]any{"code": "1", "env_vars": map[string]string{"A=B": "x"}}, http.StatusUnprocessableEntity, ""},
		{"env value not string", map[string]any{"code": "1", "env_vars": map[string]any{"A": 1}}, http.StatusUnprocessableEntity, ""},
		{"negative timeout", map[string]any{"code": "1", "timeout": -1}, http.StatusUnprocessableEntity, ""},
		{"context and language", map[string]any{"code": "1", "context_id": "x", "language": "python"}, http.StatusBadRequest, "Only one of context_id or language can be provided"},
		{"unknown context", map[string]any{"code": "1", "context_id": "nope"}, http.StatusNotFound, "Context nope not found"},
		{"unsupported language", map[string]any{"code": "1", "language": "r"}, http.StatusBadRequest, `Language "r" is not supported by this interpreter; supported: python, javascript, typescript, bash`},
	}
	for _, c := range cases {
		r := e.exec(t, c.body)
		if r.status != c.status || (c.text != "" && r.body != c.text) {
			t.Errorf("%s: %d %q, want %d %q", c.name, r.status, r.body, c.status, c.text)
		}
	}
	if st, _ := e.do(t, http.MethodGet, "/execute"); st != http.StatusMethodNotAllowed {
		t.Errorf("GET /execute: %d", st)
	}
	if r := e.exec(t, map[string]any{"code": "'py'", "language": "py", "context_id": nil}); r.status != http.StatusOK || (execResult{lines: r.lines}).mainText() != "py" {
		t.Errorf("language alias: %d %s", r.status, r.body)
	}
	if r := e.run(t, "input()"); r.err() == nil || r.err()["name"] != "EOFError" {
		t.Errorf("input(): %v", r.lines)
	}
}

func TestContextsRunInParallel(t *testing.T) {
	e := defaultEnv(t)
	_, a, _ := e.createContext(t, nil)
	_, b, _ := e.createContext(t, nil)
	fa, fb := filepath.Join(e.dir, "a"), filepath.Join(e.dir, "b")
	// Each cell announces itself and waits for the other: only parallel runs finish.
	codeA := fmt.Sprintf("open(%q, 'w').close()\n", fa) + waitFile(fb) + "'a done'"
	codeB := fmt.Sprintf("open(%q, 'w').close()\n", fb) + waitFile(fa) + "'b done'"
	var wg sync.WaitGroup
	results := make([]execResult, 2)
	for i, req := range []map[string]any{{"code": codeA, "context_id": a.ID}, {"code": codeB, "context_id": b.ID}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.exec(t, req)
		}()
	}
	wg.Wait()
	if results[0].mainText() != "a done" || results[1].mainText() != "b done" {
		t.Errorf("parallel contexts: %v / %v", results[0].lines, results[1].lines)
	}
}

func TestOneContextSerialises(t *testing.T) {
	e := newTestEnv(t, Config{}, tuning{keepalive: 20 * time.Millisecond, grace: 2 * time.Second, startTimeout: 30 * time.Second})
	started1, release, started2 := filepath.Join(e.dir, "s1"), filepath.Join(e.dir, "rel"), filepath.Join(e.dir, "s2")
	code1 := fmt.Sprintf("open(%q, 'w').close()\n", started1) + waitFile(release) + fmt.Sprintf("import os\n'overlap' if os.path.exists(%q) else 'serial'", started2)
	done1 := make(chan execResult)
	go func() { done1 <- e.exec(t, map[string]any{"code": code1}) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(started1); err == nil {
			break
		}
		if i > 4000 {
			t.Fatal("first cell never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The second request gets its response headers (and keepalives) while it waits.
	s2 := e.open(t, context.Background(), map[string]any{"code": fmt.Sprintf("open(%q, 'w').close()\n'second'", started2)})
	defer s2.close()
	if l := s2.next(t); l == nil || l["type"] != "keepalive" {
		t.Fatalf("waiting execution: first line %v", l)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r1 := <-done1
	if r1.mustNoError(t).mainText() != "serial" {
		t.Errorf("first cell: %v", r1.lines)
	}
	lines := s2.until(t, "end_of_execution")
	var second string
	for _, l := range lines {
		if l["type"] == "result" {
			second, _ = l["text"].(string)
		}
		if l["type"] == "number_of_executions" && l["execution_count"] != float64(2) {
			t.Errorf("second count %v", l["execution_count"])
		}
	}
	if second != "second" {
		t.Errorf("second cell: %v", lines)
	}
}

func TestDeleteDefaultContextAndClose(t *testing.T) {
	e := defaultEnv(t)
	first := e.run(t, "import os\nos.getpid()").mustNoError(t).mainText()
	c, err := e.srv.defaultContext(langPython)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := e.do(t, http.MethodDelete, "/contexts/"+c.id); st != http.StatusOK {
		t.Fatalf("delete default: %d", st)
	}
	second := e.run(t, "import os\nos.getpid()").mustNoError(t)
	if second.mainText() == first || second.count() != 1 {
		t.Errorf("default context not recreated: %v", second.lines)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if r := e.exec(t, map[string]any{"code": "1"}); r.status != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d %s", r.status, r.body)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		e := newTestEnv(t, Config{}, testTuning)
		_, c, _ := e.createContext(t, nil)
		e.runIn(t, c.ID, "print('x')\n1").mustNoError(t)
		e.run(t, "import os\nos._exit(1)")
		ctx, cancel := context.WithCancel(context.Background())
		s := e.open(t, ctx, map[string]any{"code": "import time\ntime.sleep(30)"})
		s.until(t, "number_of_executions")
		cancel()
		s.close()
		e.run(t, "2").mustNoError(t)
		e.ts.Close()
		if err := e.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A kernel busy in a cell still exits when its server goes away (the command pipe closes).
func TestKernelExitsWithoutServer(t *testing.T) {
	e := defaultEnv(t)
	s := e.open(t, context.Background(), map[string]any{"code": "while True:\n    pass"})
	defer s.close()
	s.until(t, "number_of_executions")
	c, err := e.srv.defaultContext(langPython)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	_ = p.cmdW.Close()
	lines := s.until(t, "end_of_execution")
	var er line
	for _, l := range lines {
		if l["type"] == "error" {
			er = l
		}
	}
	if er == nil || er["name"] != "DeadKernelError" || !strings.Contains(er["value"].(string), "exit status 0") {
		t.Errorf("kernel after its command pipe closed: %v", lines)
	}
}

func TestOversizedResultDropped(t *testing.T) {
	e := newTestEnv(t, Config{}, tuning{keepalive: time.Second, grace: 2 * time.Second, startTimeout: 30 * time.Second, maxFrame: 1 << 20})
	r := e.run(t, "display({'text/plain': 'x' * (2 << 20)}, raw=True)\nprint('after')\n'small'").mustNoError(t)
	if len(r.ofType("result")) != 1 || r.mainText() != "small" {
		t.Errorf("results: %d, main %q", len(r.ofType("result")), r.mainText())
	}
	if !strings.Contains(r.text("stderr"), "dropped: too large") || r.text("stdout") != "after\n" {
		t.Errorf("stderr %q stdout %q", r.text("stderr"), r.text("stdout"))
	}
}

func TestResultFloodCapped(t *testing.T) {
	const capBytes = 4096
	e := newTestEnv(t, Config{MaxOutputBytes: capBytes}, tuning{keepalive: time.Second, grace: 2 * time.Second, startTimeout: 30 * time.Second, maxFrame: 64 << 10})
	budget := e.srv.resultBudget()
	r := e.run(t, "for i in range(2000):\n    display({'text/plain': 'r' * 1000}, raw=True)\n'main'").mustNoError(t)
	n := len(r.ofType("result"))
	if n < 2 || int64(n-1)*1000 > budget || r.mainText() != "main" {
		t.Errorf("%d results kept with a budget of %d bytes (main %q)", n, budget, r.mainText())
	}
	if !strings.Contains(r.text("stderr"), "results exceeded") {
		t.Errorf("no note: %q", r.text("stderr"))
	}
	if r := e.run(t, "'next'").mustNoError(t); r.mainText() != "next" {
		t.Errorf("budget not reset: %v", r.lines)
	}
}

// TestBashContext: a bash context is a persistent shell: variables,
// functions and cwd survive cells, output streams, a failing cell is an
// error carrying its status, and an interrupt ends the cell, not the shell.
func TestBashContext(t *testing.T) {
	t.Parallel()
	e := defaultEnv(t)
	st, bc, body := e.createContext(t, map[string]any{"language": "bash"})
	if st != http.StatusOK || bc.Language != "bash" {
		t.Fatalf("create bash context: %d %s", st, body)
	}
	cases := []struct {
		name, code, stdout, stderr string
		errValue                   string // "" = no error
	}{
		{"state", "X=41\nf() { echo $((X + $1)); }\ncd /tmp", "", "", ""},
		{"state kept", "f 1\npwd", "42\n/tmp\n", "", ""},
		{"stderr", "echo oops >&2", "", "oops\n", ""},
		{"failing cell", "echo before\nfalse", "before\n", "", "1"},
		{"exit status of the last command", "(exit 7)", "", "", "7"},
		{"syntax error ends only the cell", "if then", "", "", "2"},
		{"still alive", "echo $X", "41\n", "", ""},
		{"stdin is empty", "cat; echo done", "done\n", "", ""},
		{"exit restarts the shell", "exit 3", "", "", "3"},
		{"fresh shell after exit", "echo ${X:-unset}", "unset\n", "", ""},
	}
	for _, c := range cases {
		r := e.runIn(t, bc.ID, c.code)
		if got := r.text("stdout"); got != c.stdout {
			t.Errorf("%s: stdout %q, want %q", c.name, got, c.stdout)
		}
		if c.name != "syntax error ends only the cell" {
			if got := r.text("stderr"); got != c.stderr {
				t.Errorf("%s: stderr %q, want %q", c.name, got, c.stderr)
			}
		}
		er := r.err()
		switch {
		case c.errValue == "" && er != nil:
			t.Errorf("%s: unexpected error %v", c.name, er)
		case c.errValue != "" && (er == nil || er["value"] != c.errValue):
			t.Errorf("%s: error %v, want value %q", c.name, er, c.errValue)
		}
		if len(r.ofType("result")) != 0 {
			t.Errorf("%s: bash cells have no results: %v", c.name, r.lines)
		}
	}
	// env_vars apply to one execution, children included.
	r := e.exec(t, map[string]any{"code": `echo "$GREETING"; bash -c 'echo "$GREETING"'`, "context_id": bc.ID, "env_vars": map[string]string{"GREETING": "hi there"}})
	if got := r.text("stdout"); got != "hi there\nhi there\n" {
		t.Errorf("env_vars: %q", got)
	}
	if got := e.runIn(t, bc.ID, `echo "${GREETING:-gone}"`).text("stdout"); got != "gone\n" {
		t.Errorf("env_vars after: %q", got)
	}
	// An interrupt (timeout) ends the cell, not the shell.
	e.runIn(t, bc.ID, "Y=kept").mustNoError(t)
	r = e.exec(t, map[string]any{"code": "sleep 30; echo not-reached", "context_id": bc.ID, "timeout": 0.5})
	if er := r.err(); er == nil || er["name"] != "TimeoutError" || strings.Contains(r.text("stdout"), "not-reached") {
		t.Errorf("timeout: %v", r.lines)
	}
	if got := e.runIn(t, bc.ID, "echo $Y").text("stdout"); got != "kept\n" {
		t.Errorf("after interrupt: %q (timeout cell: %v)", got, r.lines)
	}
	// A shell that exits leaves no descriptor behind in the kernel.
	fds := func() string { return e.runIn(t, bc.ID, "ls /proc/$PPID/fd | wc -l").text("stdout") }
	before := fds()
	for range 3 {
		e.runIn(t, bc.ID, "exit 1")
	}
	if after := fds(); after != before {
		t.Errorf("kernel descriptors: %q before three exits, %q after", before, after)
	}
	// language "bash" without a context runs in bash's default context.
	r1 := e.exec(t, map[string]any{"code": "Z=default-bash", "language": "bash"})
	r2 := e.exec(t, map[string]any{"code": "echo $Z $BASH_VERSION | cut -c1-14", "language": "bash"})
	if r1.status != http.StatusOK || r2.text("stdout") != "default-bash 5\n" {
		t.Errorf("default bash context: %d %q", r1.status, r2.text("stdout"))
	}
}

// TestContextInDirClosedToUser: kernels run as Config.Credential, except in
// a context whose cwd that user cannot enter (E2B's /root): there the
// kernel keeps the server's identity, as E2B's kernels all run as root.
func TestContextInDirClosedToUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start kernels as another user")
	}
	t.Parallel()
	work, err := os.MkdirTemp("", "kernel-cred-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	closed := filepath.Join(work, "rootonly")
	for dir, mode := range map[string]os.FileMode{work: 0o755, closed: 0o700} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	cred := &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}
	e := newTestEnv(t, Config{Workdir: work, Credential: cred, Env: []string{"PATH=/usr/bin:/bin"}}, testTuning)
	const who = "import os\n(os.getuid(), os.getcwd())"
	if got := e.run(t, who).mustNoError(t).mainText(); got != fmt.Sprintf("(1000, '%s')", work) {
		t.Errorf("default context: %s", got)
	}
	st, c, body := e.createContext(t, map[string]any{"cwd": closed})
	if st != http.StatusOK {
		t.Fatalf("context in %s: %d %s", closed, st, body)
	}
	if got := e.runIn(t, c.ID, who).mustNoError(t).mainText(); got != fmt.Sprintf("(0, '%s')", closed) {
		t.Errorf("context in a closed dir: %s", got)
	}
	st, c, body = e.createContext(t, map[string]any{"cwd": work})
	if st != http.StatusOK {
		t.Fatalf("context in %s: %d %s", work, st, body)
	}
	if got := e.runIn(t, c.ID, who).mustNoError(t).mainText(); got != fmt.Sprintf("(1000, '%s')", work) {
		t.Errorf("context in an open dir: %s", got)
	}
}

// TestCreateContextCapped: past MaxContexts a create is 429 naming the cap
// and starts no kernel; deleting one makes room again.
func TestCreateContextCapped(t *testing.T) {
	t.Parallel()
	const max = 4
	e := newTestEnv(t, Config{MaxContexts: max}, testTuning)
	var ids []string
	for len(e.srv.list()) < max { // the default contexts count too
		st, c, body := e.createContext(t, nil)
		if st != http.StatusOK {
			t.Fatalf("create under the cap: %d %s", st, body)
		}
		ids = append(ids, c.ID)
	}
	st, _, body := e.createContext(t, nil)
	if st != http.StatusTooManyRequests || !strings.Contains(body, "4 contexts") || !strings.Contains(body, "MaxContexts") {
		t.Fatalf("create past the cap: %d %s, want 429 naming it", st, body)
	}
	if n := len(e.srv.list()); n != max {
		t.Fatalf("%d contexts after the refused create, want %d", n, max)
	}
	if st, body := e.do(t, http.MethodDelete, "/contexts/"+ids[0]); st != http.StatusOK {
		t.Fatalf("delete: %d %s", st, body)
	}
	if st, _, body := e.createContext(t, nil); st != http.StatusOK {
		t.Fatalf("create after a delete: %d %s", st, body)
	}
}
