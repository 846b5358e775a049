package session

import (
	"errors"
	"testing"
)

// TestSavedResolve: a saved read follows symlinks only while they stay in
// the workspace, refuses directories and loops, and names what it lacks.
func TestSavedResolve(t *testing.T) {
	t.Parallel()
	mf := &manifest{Entries: []manifestEntry{
		{Path: "data", Type: "d"},
		{Path: "data/a.txt", Type: "f", Size: 1},
		{Path: "rel", Type: "l", Target: "data/a.txt"},
		{Path: "data/up", Type: "l", Target: "../rel"},
		{Path: "abs", Type: "l", Target: "/home/user/data/a.txt"},
		{Path: "out", Type: "l", Target: "/etc/passwd"},
		{Path: "escape", Type: "l", Target: "../../etc/passwd"},
		{Path: "dirlink", Type: "l", Target: "data"},
		{Path: "loop1", Type: "l", Target: "loop2"},
		{Path: "loop2", Type: "l", Target: "loop1"},
	}}
	for _, c := range []struct {
		path string
		kind error // nil: resolves to data/a.txt
	}{
		{"/home/user/data/a.txt", nil},
		{"/home/user/rel", nil},
		{"/home/user/data/up", nil},
		{"/home/user/abs", nil},
		{"/home/user/out", ErrNotFound},
		{"/home/user/escape", ErrNotFound},
		{"/home/user/dirlink", ErrInvalid},
		{"/home/user/data", ErrInvalid},
		{"/home/user", ErrNotFound},
		{"/home/user/loop1", ErrInvalid},
		{"/home/user/missing", ErrNotFound},
		{"/etc/passwd", ErrNotFound},
	} {
		e, err := mf.resolve(c.path)
		switch {
		case c.kind == nil && (err != nil || e.Path != "data/a.txt"):
			t.Errorf("resolve(%s) = %+v, %v; want data/a.txt", c.path, e, err)
		case c.kind != nil && !errors.Is(err, c.kind):
			t.Errorf("resolve(%s) = %+v, %v; want %v", c.path, e, err, c.kind)
		}
	}
}
