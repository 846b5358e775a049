package e2blocal

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestDirSizeIsBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 1000 one-byte files in one directory, bigger files nested below.
	for i := range 1000 {
		write("flat/f"+strconv.Itoa(i), 1)
	}
	write("a/b/c/big", 5000)
	write("top", 300)
	if err := os.Symlink("/usr", filepath.Join(dir, "usr-link")); err != nil {
		t.Fatal(err)
	}
	const full = 1000 + 5000 + 300
	// Entries: flat, a, top, usr-link, 1000 in flat, b, c, big.
	const entries = 4 + 1000 + 3
	cases := []struct {
		name         string
		limit        int
		wantComplete bool
	}{
		{"ample budget", 1 << 20, true},
		{"exact budget", entries, true},
		{"one short", entries - 1, false},
		{"inside the flat directory", 500, false},
		{"nothing", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			total, complete := dirSize(dir, c.limit)
			if complete != c.wantComplete {
				t.Fatalf("complete = %v, want %v (total %d)", complete, c.wantComplete, total)
			}
			if complete && total != full {
				t.Fatalf("total %d, want %d", total, full)
			}
			// Each entry adds at most one file, so a cut-short walk cannot
			// exceed what its budget could have seen.
			if !complete && (total >= full || c.limit == 0 && total != 0) {
				t.Fatalf("cut-short walk counted %d of %d", total, full)
			}
		})
	}
}

func BenchmarkDirSizeHugeDirectory(b *testing.B) {
	dir := b.TempDir()
	for i := range 20000 {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, complete := dirSize(dir, 1000); complete {
			b.Fatal("a 1000-entry budget covered 20000 files")
		}
	}
}
