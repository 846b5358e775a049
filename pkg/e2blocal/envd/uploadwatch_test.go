//go:build linux

package envd

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// TestUploadWatchEvents: a watcher sees an upload as E2B's envd reports its
// in-place write (create, chmod, write for a new file; chmod, write for a
// replaced one), although the upload lands by rename, and never sees the
// hidden file it was written to.
func TestUploadWatchEvents(t *testing.T) {
	t.Parallel()
	var (
		create = filesystem.EventType_EVENT_TYPE_CREATE
		chmod  = filesystem.EventType_EVENT_TYPE_CHMOD
		write  = filesystem.EventType_EVENT_TYPE_WRITE
	)
	cases := []struct {
		name     string
		existing bool
		want     []filesystem.EventType
	}{
		{"new file", false, []filesystem.EventType{create, chmod, write}},
		{"replaced file", true, []filesystem.EventType{chmod, write}},
	}
	for _, tc := range cases {
		for _, recursive := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " recursive"}[recursive], func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				dir := filepath.Join(e.home, "w", "sub")
				watched, name := filepath.Join(e.home, "w", "sub"), "f.txt"
				if recursive {
					watched, name = filepath.Join(e.home, "w"), "sub/f.txt"
				}
				mustWrite(t, filepath.Join(dir, "keep"), "")
				if tc.existing {
					mustWrite(t, filepath.Join(dir, "f.txt"), "old")
				}
				got := uploadEventsSeen(t, e, watched, recursive, filepath.Join(dir, "f.txt"), name)
				if !slices.Equal(got.types, tc.want) {
					t.Errorf("events %v, want %v", got.types, tc.want)
				}
				if got.hidden != nil {
					t.Errorf("event for the upload's hidden file: %v", got.hidden)
				}
				if got.entryPath != filepath.Join(dir, "f.txt") {
					t.Errorf("entry path %q", got.entryPath)
				}
			})
		}
	}
}

type seenEvents struct {
	types     []filesystem.EventType
	hidden    *filesystem.FilesystemEvent
	entryPath string
}

// uploadEventsSeen uploads to path while watching dir, then makes a marker
// file and returns the events for name that came before the marker's.
func uploadEventsSeen(t *testing.T, e *env, dir string, recursive bool, path, name string) seenEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	s, err := e.fs().WatchDir(ctx, connect.NewRequest(&filesystem.WatchDirRequest{Path: dir, Recursive: recursive, IncludeEntry: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Receive() || s.Msg().GetStart() == nil {
		t.Fatalf("first message %v %v", s.Msg(), s.Err())
	}
	status, _, body := do(t, "POST", filesURL(e.url, map[string]string{"path": path}), strings.NewReader("new"),
		map[string]string{"Content-Type": "application/octet-stream"})
	if status != 200 {
		t.Fatalf("upload %d %s", status, body)
	}
	mustWrite(t, filepath.Join(dir, "marker"), "")
	var got seenEvents
	for s.Receive() {
		ev := s.Msg().GetFilesystem()
		switch {
		case ev == nil:
		case ev.GetName() == "marker":
			return got
		case isUploadTemp(filepath.Base(ev.GetName())):
			got.hidden = ev
		case ev.GetName() == name:
			got.types = append(got.types, ev.GetType())
			got.entryPath = ev.GetEntry().GetPath()
		}
	}
	t.Fatalf("watch ended before the marker: %v", s.Err())
	return got
}
