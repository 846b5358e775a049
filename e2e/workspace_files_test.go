package e2e

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// TestFilesOfAStoppedSession reads the files of a session without a
// sandbox through the API: stopped, and then with its sandbox gone (the
// service restarted on the same data dir). Listings and bytes come from the
// last checkpoint, say so, and start no sandbox; writes still start one.
func TestFilesOfAStoppedSession(t *testing.T) {
	t.Parallel()
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := func() (*local.Service, *client.Client) {
		svc, err := local.Start(ctx, local.Config{DataDir: dir, Keys: []local.Key{key}})
		if err != nil {
			t.Fatal(err)
		}
		return svc, client.New(svc.URL, key.Secret, nil)
	}
	const sid = "ws-files"
	svc, c := start()
	res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: `import os
os.makedirs('data/deep', exist_ok=True)
open('data/notes.txt', 'w').write('saved notes')
open('data/deep/x.bin', 'wb').write(bytes(range(256)))
os.symlink('data/notes.txt', 'link.txt')
os.makedirs('.cache', exist_ok=True)
open('.cache/skip', 'w').write('not checkpointed')`}, nil)
	if err != nil || !res.Success {
		t.Fatalf("execute: %+v %v", res, err)
	}
	st, err := c.Stop(ctx, sid)
	if err != nil || st.State != "stopped" || st.LastCheckpoint == nil {
		t.Fatalf("stop: %+v %v", st, err)
	}
	at := st.LastCheckpoint.At
	checkSaved(ctx, t, c, sid, at)
	// A model's tools read the same checkpoint.
	cs := mcpConnectURL(t, svc.URL+"/v1/mcp?session="+sid, key.Secret, nil)
	if res := callTool(t, cs, "list_files", map[string]any{"path": "data"}); res.IsError || !strings.Contains(toolText(res), "notes.txt") {
		t.Errorf("MCP list_files of the stopped session: %s", toolText(res))
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "data/notes.txt"}); res.IsError || !strings.Contains(toolText(res), "saved notes") {
		t.Errorf("MCP read_file of the stopped session: %s", toolText(res))
	}
	if st, err := c.Status(ctx, sid); err != nil || st.State != "stopped" {
		t.Fatalf("reads started the session: %+v %v", st, err)
	}

	// A write keeps today's behaviour: it starts the sandbox, whose files
	// are live again.
	if _, err := c.WriteFile(ctx, sid, "data/new.txt", strings.NewReader("live"), 4); err != nil {
		t.Fatal(err)
	}
	l, err := c.ListDir(ctx, sid, "data", 1)
	if err != nil || l.Source != "" || l.CheckpointAt != nil || len(l.Entries) != 3 {
		t.Fatalf("live listing after a write: %+v %v", l, err)
	}
	if _, err := c.Checkpoint(ctx, sid); err != nil {
		t.Fatal(err)
	}
	st, err = c.Status(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	// The service restarted on the same data dir: the session's sandbox is
	// gone, and its files are those of the last checkpoint.
	svc, c = start()
	defer svc.Close()
	l, err = c.ListDir(ctx, sid, "data", 1)
	if err != nil || l.Source != "workspace" || l.CheckpointAt == nil || !l.CheckpointAt.Equal(st.LastCheckpoint.At) {
		t.Fatalf("listing with the sandbox gone: %+v %v", l, err)
	}
	if names := entryPaths(l); !slices.Contains(names, "/home/user/data/new.txt") {
		t.Fatalf("listing with the sandbox gone lacks the file written before the checkpoint: %v", names)
	}
}

// checkSaved checks the reads of session sid, stopped with its checkpoint
// taken at at.
func checkSaved(ctx context.Context, t *testing.T, c *client.Client, sid string, at time.Time) {
	t.Helper()
	lists := []struct {
		dir   string
		depth int
		want  []string
	}{
		{"/home/user", 1, []string{"/home/user/data", "/home/user/link.txt"}},
		{"data", 1, []string{"/home/user/data/deep", "/home/user/data/notes.txt"}},
		{"/home/user", 3, []string{"/home/user/data", "/home/user/data/deep", "/home/user/data/deep/x.bin", "/home/user/data/notes.txt", "/home/user/link.txt"}},
	}
	for _, tc := range lists {
		l, err := c.ListDir(ctx, sid, tc.dir, tc.depth)
		if err != nil || l.Source != "workspace" || l.CheckpointAt == nil || !l.CheckpointAt.Equal(at) {
			t.Fatalf("ls %s: %+v %v (checkpoint at %v)", tc.dir, l, err, at)
		}
		// The image's own dot-directories (.local) are in the workspace too.
		got := slices.DeleteFunc(entryPaths(l), func(p string) bool { return strings.HasPrefix(p, "/home/user/.local") })
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ls %s depth %d = %v, want %v", tc.dir, tc.depth, got, tc.want)
		}
	}
	reads := []struct{ path, want string }{
		{"data/notes.txt", "saved notes"},
		{"/home/user/link.txt", "saved notes"},
		{"data/deep/x.bin", allBytes()},
	}
	for _, tc := range reads {
		body, size, src, err := c.OpenDownloadFrom(ctx, sid, tc.path)
		if err != nil {
			t.Fatalf("get %s: %v", tc.path, err)
		}
		b, err := io.ReadAll(body)
		_ = body.Close()
		if err != nil || string(b) != tc.want || size != int64(len(tc.want)) || !src.Workspace || !src.CheckpointAt.Equal(at) {
			t.Errorf("get %s = %q (size %d, %+v, %v), want %q from the checkpoint at %v", tc.path, b, size, src, err, tc.want, at)
		}
	}
	refused := []struct {
		path   string
		status int
	}{
		{"data", http.StatusBadRequest},
		{"data/missing.txt", http.StatusNotFound},
		{".cache/skip", http.StatusNotFound},
		{"/etc/passwd", http.StatusNotFound},
	}
	for _, tc := range refused {
		if _, _, err := c.OpenFile(ctx, sid, tc.path); !client.IsStatus(err, tc.status) {
			t.Errorf("get %s: %v, want %d", tc.path, err, tc.status)
		}
	}
	if _, err := c.ListDir(ctx, sid, "nowhere", 1); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("ls of a directory the checkpoint lacks: %v, want 404", err)
	}
	if _, err := c.ListDir(ctx, "no-such-session", "/home/user", 1); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("ls of an unknown session: %v, want 404", err)
	}
}

func entryPaths(l *client.FileListing) []string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Path)
	}
	return out
}

// allBytes is the 256 byte values in order.
func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}
