//go:build linux

package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The server's watch of a kernel's directory reports the same files as the
// kernel's own scans, cell after cell, on two servers that run the same
// cells, one watching and one scanning; what happens between cells is not
// a cell's change.
func TestWatchReportsAsScans(t *testing.T) {
	t.Parallel()
	// inotify instances are counted per user, machine-wide: with none left
	// the server rightly falls back to scans, and there is no watch to test.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify instance to watch with: %v", err)
	}
	unix.Close(fd)
	scanTuning := testTuning
	scanTuning.scanOnly = true
	watched, scanned := defaultEnv(t), newTestEnv(t, Config{}, scanTuning)
	steps := []struct {
		name    string
		between func(dir string) error // done outside any cell, before it
		code    string
		want    []string
	}{
		{"nothing", nil, "1+1", nil},
		{"root file, subdirectory file, subprocess; hidden and deep skipped", nil, `import os
open('a.txt', 'w').write('a')
os.makedirs('d/e', exist_ok=True)
open('d/b.txt', 'w').write('b')
open('d/e/deep.txt', 'w').write('deep')
os.system('echo hi > sub.txt')
open('.hidden', 'w').write('h')
os.makedirs('.cache', exist_ok=True)
open('.cache/c.txt', 'w').write('c')`, []string{"a.txt", "d/b.txt", "sub.txt"}},
		{"written between cells", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "uploaded.txt"), []byte("u"), 0o644)
		}, "1+1", nil},
		{"appended, touched, renamed, removed", nil, `import os
open('a.txt', 'a').write('more')
os.utime('d/b.txt', (1, 1))
os.rename('sub.txt', 'moved.txt')
os.remove('uploaded.txt')`, []string{"a.txt", "d/b.txt", "moved.txt"}},
		{"a directory moved in and one renamed", nil, `import os
os.makedirs('.stage/x', exist_ok=True)
open('.stage/x/in.txt', 'w').write('i')
os.rename('.stage/x', 'x')
os.rename('d', 'd2')`, []string{"d2/b.txt", "x/in.txt"}},
		{"in the renamed directory", nil, "open('d2/new.txt', 'w').write('n')", []string{"d2/new.txt"}},
		{"an error after a write", nil, "open('e.txt', 'w').write('e')\nraise ValueError('boom')", []string{"e.txt"}},
		{"a directory removed", nil, "import shutil\nshutil.rmtree('x')", nil},
	}
	for _, st := range steps {
		for _, e := range []*testEnv{watched, scanned} {
			if st.between != nil {
				if err := st.between(e.dir); err != nil {
					t.Fatal(err)
				}
			}
			files, ok := changedFiles(t, e.dir, e.run(t, st.code))
			if !ok {
				t.Fatalf("%s (scanning %v): no files_changed line", st.name, e == scanned)
			}
			var got []string
			for p := range files {
				rel, _ := filepath.Rel(e.dir, p)
				got = append(got, rel)
			}
			slices.Sort(got)
			if !slices.Equal(got, st.want) {
				t.Errorf("%s (scanning %v): changed %v, want %v", st.name, e == scanned, got, st.want)
			}
		}
	}
	// The watching server did watch: its kernel has a watch that never broke.
	c, err := watched.srv.defaultContext(langPython)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	w := c.p.watch
	c.mu.Unlock()
	if w == nil || w.broken {
		t.Fatalf("watch %+v: the kernel scanned instead", w)
	}
}

// TestWatchRecoversAfterBreaking: a cell that names more files than a
// report holds breaks the watch for that cell only; the next cell has a new
// watch and reports what it changed.
func TestWatchRecoversAfterBreaking(t *testing.T) {
	t.Parallel()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify instance to watch with: %v", err)
	}
	unix.Close(fd)
	e := defaultEnv(t)
	watch := func() *treeWatch {
		c, err := e.srv.defaultContext(langPython)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.p.mu.Lock()
		defer c.p.mu.Unlock()
		return c.p.watch
	}
	e.run(t, "1+1").mustNoError(t)
	first := watch()
	if first == nil {
		t.Fatal("the kernel has no watch")
	}
	churn := fmt.Sprintf("import os\nfor i in range(%d):\n    open('t%%d' %% i, 'w').close()\n    os.remove('t%%d' %% i)", maxChangedFiles+1)
	e.run(t, churn).mustNoError(t)
	if !first.isBroken() {
		t.Fatal("the watch did not break on a cell naming more files than a report holds")
	}
	files, ok := changedFiles(t, e.dir, e.run(t, "open('after.txt', 'w').write('x')").mustNoError(t))
	if !ok || len(files) != 1 || files[filepath.Join(e.dir, "after.txt")] == nil {
		t.Fatalf("the cell after the break: files %v (line %v), want after.txt alone", files, ok)
	}
	if w := watch(); w == nil || w == first || w.isBroken() {
		t.Fatalf("the cell after the break watched with %p (the broken one %p)", w, first)
	}
}
