package localaws

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStagedWriteFailure: a file whose write fails (a full disk, say) is
// not renamed into place, and its staged copy is removed.
func TestStagedWriteFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fsys, err := newAtomicFs(root)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root, "obj")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		open  func() (interface{ Close() error }, error)
		write func(f any) error
	}{
		{"a write fails", func() (interface{ Close() error }, error) { return fsys.Create(name) }, func(f any) error {
			sf := f.(*stagedFile)
			_ = sf.File.Close() // every later write fails, as on a full disk
			_, err := sf.Write([]byte("new"))
			return err
		}},
		{"a prepared body is short", func() (interface{ Close() error }, error) {
			body := filepath.Join(fsys.staging, "body-test")
			if err := os.WriteFile(body, []byte("new content"), 0o600); err != nil {
				return nil, err
			}
			fsys.prepare(name, body)
			return fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
		}, func(f any) error {
			_, err := f.(*preparedFile).Write([]byte("new"))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.open()
			if err != nil {
				t.Fatal(err)
			}
			_ = tc.write(f)
			if err := f.Close(); err == nil {
				t.Fatal("Close of a failed write succeeded")
			}
			if got, err := os.ReadFile(name); err != nil || string(got) != "old" {
				t.Fatalf("file after a failed write: %q, %v", got, err)
			}
			if entries, _ := os.ReadDir(fsys.staging); len(entries) != 0 {
				t.Fatalf("staging keeps %d files", len(entries))
			}
		})
	}
}
