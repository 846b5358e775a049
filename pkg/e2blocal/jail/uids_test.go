//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestUIDLockDirMustBePrivate(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string // "" when the pool must accept the dir
	}{
		{"missing is created", func(*testing.T, string) {}, ""},
		{"private existing", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o700) }, ""},
		{"world writable", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o777) }, "want 0700"},
		{"group readable", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o750) }, "want 0700"},
		{"symlink to a private dir", func(t *testing.T, dir string) {
			target := dir + "-target"
			mkdirMode(t, target, 0o700)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
		{"regular file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
		{"owned by another user", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another uid needs root")
			}
			mkdirMode(t, dir, 0o700)
			if err := os.Chown(dir, 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 12345"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "uids")
			c.prepare(t, dir)
			p, err := NewUIDPool(200000, 10, dir)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("newUIDPool: %v", err)
			}
			l, err := p.Acquire()
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			defer l.Release()
			if l.UID < 200000 || l.UID >= 200010 {
				t.Fatalf("lease %d outside the range", l.UID)
			}
			if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(l.UID))); err != nil {
				t.Fatalf("lock file of uid %d: %v", l.UID, err)
			}
		})
	}
}

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
