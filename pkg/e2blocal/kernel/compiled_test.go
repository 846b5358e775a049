//go:build linux

package kernel

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompiledKernel runs kernels from a .pyc made by Compile: they work
// like ones fed the source, the .pyc's directory is not on the user's
// import path, and tracebacks still hide the kernel's own frames.
func TestCompiledKernel(t *testing.T) {
	dir := t.TempDir()
	pyc, err := Compile(testPython, dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(pyc) != dir {
		t.Fatalf("compiled to %s, want it in %s", pyc, dir)
	}
	e := newTestEnv(t, Config{Compiled: pyc}, testTuning)
	if got := e.run(t, "open('/proc/self/cmdline').read().split('\\x00')[1]").mustNoError(t).mainText(); got != pyc {
		t.Fatalf("kernel runs %q, want the compiled %q", got, pyc)
	}
	if got := e.run(t, "import sys\n(sys.path[0], "+strconv.Quote(dir)+" in sys.path)").mustNoError(t).mainText(); got != "('', False)" {
		t.Fatalf("sys.path[0] and the kernel's directory on the path: %s, want ('', False)", got)
	}
	er := e.run(t, "1/0").err()
	if er == nil || er["name"] != "ZeroDivisionError" || strings.Contains(er["traceback"].(string), "kernel.py") {
		t.Fatalf("error %v", er)
	}
	if got := e.run(t, "6 * 7").mustNoError(t); got.mainText() != "42" || got.count() != 4 {
		t.Fatalf("6 * 7 = %s (count %d)", got.mainText(), got.count())
	}
}

// TestCompileFails reports an interpreter that cannot compile the kernel.
func TestCompileFails(t *testing.T) {
	if _, err := Compile("/nonexistent/python3", t.TempDir()); err == nil {
		t.Fatal("Compile with a missing interpreter succeeded")
	}
}
