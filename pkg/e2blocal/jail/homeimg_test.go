//go:build linux

package jail

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnescapeMount: mountinfo escapes spaces, tabs, newlines and
// backslashes in paths.
func TestUnescapeMount(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/a/b", "/a/b"},
		{`/a\040b`, "/a b"},
		{`/a\134b\011`, "/a\\b\t"},
		{`/a\04`, `/a\04`},
	} {
		if got := UnescapeMount(c.in); got != c.want {
			t.Errorf("unescapeMount(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCopyImage: a home copied from the template has the template's bytes
// and size, and its holes stay holes (the copy allocates no more than the
// template's data).
func TestCopyImage(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	dir := t.TempDir()
	src := filepath.Join(dir, "template.img")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 1 << 20, 5<<20 + 4096, size - 8192} {
		if _, err := f.WriteAt(bytes.Repeat([]byte{byte(off>>12) | 1}, 8192), off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	for _, tc := range []struct {
		name string
		size int64
	}{{"same size", size}, {"larger home", 2 * size}} {
		t.Run(tc.name, func(t *testing.T) {
			dst, err := os.Create(filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".img"))
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if err := copyImage(dst, src, tc.size); err != nil {
				t.Fatalf("copyImage: %v", err)
			}
			want, _ := os.ReadFile(src)
			got, _ := os.ReadFile(dst.Name())
			if int64(len(got)) != tc.size || !bytes.Equal(got[:size], want) || bytes.ContainsFunc(got[size:], func(r rune) bool { return r != 0 }) {
				t.Fatalf("copy of %d bytes differs from the template (%d bytes)", len(got), len(want))
			}
			var ss, ds syscall.Stat_t
			if err := syscall.Stat(src, &ss); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Stat(dst.Name(), &ds); err != nil {
				t.Fatal(err)
			}
			if ds.Blocks > ss.Blocks {
				t.Fatalf("copy allocates %d blocks, the template %d: holes were filled", ds.Blocks, ss.Blocks)
			}
		})
	}
}
