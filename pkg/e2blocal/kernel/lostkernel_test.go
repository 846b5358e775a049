//go:build linux

package kernel

import (
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKernelKilledBetweenCells: a kernel killed behind the server's back
// is replaced by a fresh one for the next cell, whose count line says
// kernel_restarted; cells on a kernel that lived on do not.
func TestKernelKilledBetweenCells(t *testing.T) {
	e := defaultEnv(t)
	restarted := func(r execResult) bool {
		for _, l := range r.ofType("number_of_executions") {
			if l["kernel_restarted"] == true {
				return true
			}
		}
		return false
	}
	first := e.run(t, "import os\nx = 1\nos.getpid()").mustNoError(t)
	if restarted(first) {
		t.Fatal("the first cell says the kernel was restarted")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(first.mainText()))
	if err != nil {
		t.Fatalf("kernel pid %q: %v", first.mainText(), err)
	}
	if again := e.run(t, "x").mustNoError(t); restarted(again) || again.mainText() != "1" {
		t.Fatalf("a cell on the same kernel: restarted %v, x = %s", restarted(again), again.mainText())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the killed kernel is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := e.run(t, "'x' in globals()")
	if errs := after.ofType("error"); len(errs) > 0 && errs[0]["name"] == "DeadKernelError" {
		// The cell raced the server noticing the death: it is reported as
		// a dead kernel instead, which says as much.
		after = e.run(t, "'x' in globals()")
		if after.mainText() != "False" {
			t.Fatalf("after a dead-kernel cell: state kept %s", after.mainText())
		}
		return
	}
	if !restarted(after) || after.mainText() != "False" {
		t.Fatalf("the cell after the kill: restarted %v, state kept %s, lines %v", restarted(after), after.mainText(), after.lines)
	}
	if next := e.run(t, "1 + 1"); restarted(next) {
		t.Fatal("the restart is reported again on the next cell")
	}
}

// TestContextReplacedOnRequest: a context restarted or deleted by another
// caller of the sandbox's /contexts routes loses its state, and the next
// execution says so (kernel_restarted) once; a replacement before any
// execution lost nothing and says nothing.
func TestContextReplacedOnRequest(t *testing.T) {
	t.Parallel()
	restarted := func(r execResult) bool {
		for _, l := range r.ofType("number_of_executions") {
			if l["kernel_restarted"] == true {
				return true
			}
		}
		return false
	}
	defaultID := func(t *testing.T, e *testEnv) string {
		c, err := e.srv.defaultContext(langPython)
		if err != nil {
			t.Fatal(err)
		}
		return c.id
	}
	cases := []struct {
		name     string
		runFirst bool
		replace  func(t *testing.T, e *testEnv, id string) (int, string)
		want     bool
	}{
		{"restart after a cell", true, func(t *testing.T, e *testEnv, id string) (int, string) {
			return e.do(t, http.MethodPost, "/contexts/"+id+"/restart")
		}, true},
		{"delete after a cell", true, func(t *testing.T, e *testEnv, id string) (int, string) {
			return e.do(t, http.MethodDelete, "/contexts/"+id)
		}, true},
		{"restart before any cell", false, func(t *testing.T, e *testEnv, id string) (int, string) {
			return e.do(t, http.MethodPost, "/contexts/"+id+"/restart")
		}, false},
		{"delete before any cell", false, func(t *testing.T, e *testEnv, id string) (int, string) {
			return e.do(t, http.MethodDelete, "/contexts/"+id)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := defaultEnv(t)
			if c.runFirst {
				e.run(t, "x = 1").mustNoError(t)
			}
			if st, body := c.replace(t, e, defaultID(t, e)); st != http.StatusOK {
				t.Fatalf("replace: %d %s", st, body)
			}
			after := e.run(t, "'x' in globals()")
			if restarted(after) != c.want || after.mainText() != "False" {
				t.Fatalf("after the replacement: kernel_restarted %v (want %v), x kept %s", restarted(after), c.want, after.mainText())
			}
			if next := e.run(t, "1"); restarted(next) {
				t.Fatal("the replacement is reported again")
			}
		})
	}
}
