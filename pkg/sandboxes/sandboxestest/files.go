package sandboxestest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func readAll(t *testing.T, env Env, id, path string) string {
	t.Helper()
	r, err := env.Sandboxes.ReadFile(t.Context(), id, path)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", path, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(b)
}

// testFiles: a write makes its parents, reads back byte for byte, stats
// and lists with its size, and is gone once removed.
func testFiles(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	dir := env.Dir + "/files/deep"
	path := dir + "/data.bin"
	data := bytes.Repeat([]byte{0, 1, 2, 'x', 0xff}, 100_000)
	must(t, "WriteFile", sb.WriteFile(ctx, info.ID, path, bytes.NewReader(data)))
	if got := readAll(t, env, info.ID, path); got != string(data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
	st, err := sb.StatFile(ctx, info.ID, path)
	if err != nil || st.Type != "file" || st.Size != int64(len(data)) || st.Path != path {
		t.Fatalf("StatFile: %+v, %v; want the file of %d bytes", st, err, len(data))
	}
	if st, err := sb.StatFile(ctx, info.ID, dir); err != nil || st.Type != "dir" {
		t.Fatalf("StatFile of its parent: %+v, %v; want a dir", st, err)
	}
	entries, err := sb.ListFiles(ctx, info.ID, dir, 1)
	if err != nil || len(entries) != 1 || entries[0].Name != "data.bin" || entries[0].Path != path || entries[0].Size != int64(len(data)) {
		t.Fatalf("ListFiles: %+v, %v; want data.bin alone", entries, err)
	}
	must(t, "WriteFile over it", sb.WriteFile(ctx, info.ID, path, strings.NewReader("short")))
	if got := readAll(t, env, info.ID, path); got != "short" {
		t.Fatalf("after overwriting, read %d bytes, want %q", len(got), "short")
	}
	must(t, "RemoveFile", sb.RemoveFile(ctx, info.ID, path))
	_, err = sb.StatFile(ctx, info.ID, path)
	wantErr(t, "StatFile after RemoveFile", err, session.ErrNotFound)
	// A directory goes with everything in it.
	must(t, "WriteFile", sb.WriteFile(ctx, info.ID, dir+"/again.txt", strings.NewReader("again")))
	must(t, "RemoveFile of a directory", sb.RemoveFile(ctx, info.ID, env.Dir+"/files"))
	_, err = sb.StatFile(ctx, info.ID, dir+"/again.txt")
	wantErr(t, "StatFile of a file in a removed directory", err, session.ErrNotFound)
}

// testFilesNotFound: reading or statting what is not there is ErrNotFound
// (the Manager answers 404 with it), not a gone sandbox; removing it
// succeeds, as in E2B: the path is gone either way.
func testFilesNotFound(t *testing.T, env Env) {
	sb, ctx := env.Sandboxes, t.Context()
	info, _ := newSandbox(t, env)
	missing := env.Dir + "/no/such/file"
	_, err := sb.ReadFile(ctx, info.ID, missing)
	wantErr(t, "ReadFile of a missing file", err, session.ErrNotFound)
	_, err = sb.StatFile(ctx, info.ID, missing)
	wantErr(t, "StatFile of a missing file", err, session.ErrNotFound)
	must(t, "RemoveFile of a missing file", sb.RemoveFile(ctx, info.ID, missing))
}
