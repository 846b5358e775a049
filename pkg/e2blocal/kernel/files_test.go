//go:build linux

package kernel

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// changedFiles returns the files_changed line's files by path, checking the
// line comes right before end_of_execution; ok is false when there is none.
func changedFiles(t *testing.T, root string, r execResult) (files map[string]line, ok bool) {
	t.Helper()
	ls := r.ofType("files_changed")
	if len(ls) == 0 {
		return nil, false
	}
	if len(ls) > 1 || r.lines[len(r.lines)-2]["type"] != "files_changed" {
		t.Fatalf("files_changed lines %v, want one just before end_of_execution", r.lines)
	}
	if ls[0]["complete"] != true || ls[0]["root"] != root {
		t.Errorf("files_changed %v, want complete for root %s", ls[0], root)
	}
	files = map[string]line{}
	raw, _ := ls[0]["files"].([]any)
	for _, f := range raw {
		m := f.(map[string]any)
		files[m["path"].(string)] = m
	}
	return files, true
}

func TestFilesChanged(t *testing.T) {
	e := defaultEnv(t)
	p := func(rel string) string { return filepath.Join(e.dir, rel) }
	e.run(t, "open('old.txt', 'w').write('old')\nopen('same.txt', 'w').write('same')").mustNoError(t)
	cases := []struct {
		name string
		code string
		want []string
	}{
		{"written by code, a subprocess and in a subdirectory; hidden and deep skipped", `import os
open('a.txt', 'w').write('hello')
os.system('echo hi > sub.txt')
os.makedirs('d/e', exist_ok=True)
open('d/b.bin', 'wb').write(b'12345')
open('d/e/deep.txt', 'w').write('too deep')
open('.hidden', 'w').write('x')
os.makedirs('.cache', exist_ok=True)
open('.cache/c.txt', 'w').write('x')`, []string{"a.txt", "d/b.bin", "sub.txt"}},
		{"a changed file only", "open('old.txt', 'a').write('er')", []string{"old.txt"}},
		{"nothing changed", "1+1", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, ok := changedFiles(t, e.dir, e.run(t, c.code).mustNoError(t))
			if !ok {
				t.Fatal("no files_changed line")
			}
			var got []string
			for path, f := range files {
				rel, _ := filepath.Rel(e.dir, path)
				got = append(got, rel)
				st, err := os.Stat(path)
				if err != nil {
					t.Fatalf("reported %s: %v", path, err)
				}
				mod, err := time.Parse(time.RFC3339Nano, f["modified"].(string))
				if err != nil || !mod.Equal(st.ModTime()) || f["size"] != float64(st.Size()) {
					t.Errorf("%s: reported %v, stat size %d modified %v (%v)", rel, f, st.Size(), st.ModTime(), err)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("changed %v, want %v", got, c.want)
			}
		})
	}
	if _, err := os.Stat(p("d/e/deep.txt")); err != nil {
		t.Fatalf("deep file not written: %v", err)
	}
}

// TestFilesChangedBound checks a tree past the scan bound yields no line
// (the caller then lists), and that a cell interrupted by an error still reports.
func TestFilesChangedBound(t *testing.T) {
	e := defaultEnv(t)
	r := e.run(t, "import os\nos.makedirs('many')\nfor i in range(2100): open('many/f%d' % i, 'w').close()")
	if _, ok := changedFiles(t, e.dir, r.mustNoError(t)); ok {
		t.Errorf("files_changed sent for a tree past the bound: %v", r.ofType("files_changed"))
	}
	if _, ok := changedFiles(t, e.dir, e.run(t, "1+1").mustNoError(t)); ok {
		t.Error("files_changed sent while the tree is past the bound")
	}
	e.run(t, "import shutil\nshutil.rmtree('many')")
	files, ok := changedFiles(t, e.dir, e.run(t, "open('x.txt', 'w').write('x')\nraise ValueError('boom')"))
	if !ok || len(files) != 1 || files[filepath.Join(e.dir, "x.txt")] == nil {
		t.Errorf("after an error: files %v (line %v)", files, ok)
	}
}

func TestAppendFilesChangedLine(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"nothing changed", `{"root":"/h","files":[]}`, `{"type":"files_changed","root":"/h","files":[],"complete":true}` + "\n"},
		{"null files", `{"root":"/h","files":null}`, `{"type":"files_changed","root":"/h","files":[],"complete":true}` + "\n"},
		{"one, unknown keys dropped", `{"root":"/h","files":[{"path":"/h/a","size":3,"modified":"2026-01-02T03:04:05.000000006Z","extra":1}]}`,
			`{"type":"files_changed","root":"/h","files":[{"path":"/h/a","size":3,"modified":"2026-01-02T03:04:05.000000006Z"}],"complete":true}` + "\n"},
		{"not JSON", `{"root":`, ``},
		{"a list", `[]`, ``},
		{"no root", `{"files":[]}`, ``},
		{"bad time", `{"root":"/h","files":[{"path":"/h/a","size":1,"modified":"yesterday"}]}`, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(appendFilesChangedLine(nil, []byte(c.data), nil)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			// With a cache of the kernel's empty report: the same line
			// the first time and again from the cache.
			var empty emptyReport
			for i := range 2 {
				if got := string(appendFilesChangedLine(nil, []byte(c.data), &empty)); got != c.want {
					t.Errorf("cached, call %d: got %q, want %q", i+1, got, c.want)
				}
			}
		})
	}
}

// The cached empty report answers only for the very same bytes.
func TestEmptyReportCache(t *testing.T) {
	var empty emptyReport
	steps := []struct{ data, want string }{
		{`{"root": "/h", "files": []}`, `{"type":"files_changed","root":"/h","files":[],"complete":true}` + "\n"},
		{`{"root": "/h", "files": [{"path": "/h/a", "size": 1, "modified": "2026-01-02T03:04:05Z"}]}`,
			`{"type":"files_changed","root":"/h","files":[{"path":"/h/a","size":1,"modified":"2026-01-02T03:04:05Z"}],"complete":true}` + "\n"},
		{`{"root": "/h", "files": []}`, `{"type":"files_changed","root":"/h","files":[],"complete":true}` + "\n"},
		{`{"root": "/g", "files": []}`, `{"type":"files_changed","root":"/g","files":[],"complete":true}` + "\n"},
		{`{"root": "/g", "files": [`, ``},
		{`{"root": "/g", "files": []}`, `{"type":"files_changed","root":"/g","files":[],"complete":true}` + "\n"},
	}
	for i, st := range steps {
		if got := string(appendFilesChangedLine([]byte("x"), []byte(st.data), &empty)); got != "x"+st.want {
			t.Errorf("step %d: got %q, want %q", i+1, got, "x"+st.want)
		}
	}
}
