//go:build linux

package envd

import (
	"io"
	"os"
	"testing"
	"time"
)

// A reader that runs only after drainGrace (a loaded machine) still gets
// the output a finished process left in its pipe, although a background
// child keeps the pipe's write end open; and once the pipe is empty the
// sources are closed, so that child cannot hold the end event back.
func TestAwaitDrainKeepsOutputForLateReaders(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // the background child's copy of the write end
	const out = "last words before exit\n"
	if _, err := w.WriteString(out); err != nil {
		t.Fatal(err)
	}
	readersDone := make(chan struct{})
	got := make(chan string, 1)
	go func() {
		defer close(readersDone)
		time.Sleep(3 * drainGrace) // starved past the grace period
		b, _ := io.ReadAll(r)      // ends when awaitDrain closes r
		got <- string(b)
	}()
	returned := make(chan struct{})
	go func() {
		awaitDrain([]outputSource{{kind: outStdout, f: r}}, readersDone)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(drainMax / 2):
		t.Fatal("awaitDrain did not close an emptied pipe whose writer stays open")
	}
	if s := <-got; s != out {
		t.Fatalf("late reader got %q, want %q", s, out)
	}
}
