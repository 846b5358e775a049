//go:build linux

package envd

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

func mustWrite(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func fileHasNewline(path string) bool {
	s, err := readFileString(path)
	return err == nil && strings.HasSuffix(s, "\n")
}

func readPid(t testing.TB, path string) int {
	t.Helper()
	s, err := readFileString(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestStat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "dir", "f.txt"), "hello")
	for link, target := range map[string]string{"link": "dir/f.txt", "link2": "link", "dangling": "gone/x"} {
		if err := os.Symlink(target, filepath.Join(e.home, link)); err != nil {
			t.Fatal(err)
		}
	}
	realHome, err := filepath.EvalSymlinks(e.home)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path   string
		code   connect.Code
		want   string
		ftype  filesystem.FileType
		size   int64
		target string // a symlink's symlinkTarget: resolved and absolute, as E2B reports it
	}{
		{path: "link2", want: filepath.Join(e.home, "link2"), ftype: filesystem.FileType_FILE_TYPE_SYMLINK, size: -1, target: filepath.Join(realHome, "dir", "f.txt")},
		{path: "dangling", want: filepath.Join(e.home, "dangling"), ftype: filesystem.FileType_FILE_TYPE_SYMLINK, size: -1, target: filepath.Join(e.home, "gone", "x")},
		{"dir/f.txt", 0, filepath.Join(e.home, "dir", "f.txt"), filesystem.FileType_FILE_TYPE_FILE, 5, ""},
		{"~/dir", 0, filepath.Join(e.home, "dir"), filesystem.FileType_FILE_TYPE_DIRECTORY, -1, ""},
		{filepath.Join(e.home, "dir", "..", "dir", "f.txt"), 0, filepath.Join(e.home, "dir", "f.txt"), filesystem.FileType_FILE_TYPE_FILE, 5, ""},
		{"link", 0, filepath.Join(e.home, "link"), filesystem.FileType_FILE_TYPE_SYMLINK, -1, filepath.Join(realHome, "dir", "f.txt")},
		{"", 0, e.home, filesystem.FileType_FILE_TYPE_DIRECTORY, -1, ""},
		{"missing", connect.CodeNotFound, "", 0, 0, ""},
		{"dir/f.txt/below", connect.CodeNotFound, "", 0, 0, ""},
		{"~other/x", connect.CodeInvalidArgument, "", 0, 0, ""},
		{"bad\x00path", connect.CodeInvalidArgument, "", 0, 0, ""},
	}
	for _, codec := range codecs {
		c := e.fs(codec.opts...)
		for _, tc := range cases {
			t.Run(codec.name+"/"+tc.path, func(t *testing.T) {
				resp, err := c.Stat(testCtx(t), connect.NewRequest(&filesystem.StatRequest{Path: tc.path}))
				if tc.code != 0 {
					wantCode(t, err, tc.code)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got := resp.Msg.GetEntry()
				if got.GetPath() != tc.want || got.GetName() != filepath.Base(tc.want) || got.GetType() != tc.ftype {
					t.Errorf("entry %v, want path %s type %v", got, tc.want, tc.ftype)
				}
				if tc.size >= 0 && got.GetSize() != tc.size {
					t.Errorf("size %d, want %d", got.GetSize(), tc.size)
				}
				if got.GetModifiedTime() == nil || got.GetPermissions() == "" || got.GetOwner() == "" {
					t.Errorf("incomplete entry %v", got)
				}
				if got.GetSymlinkTarget() != tc.target {
					t.Errorf("symlink target %q, want %q", got.GetSymlinkTarget(), tc.target)
				}
			})
		}
	}
}

func TestMakeDirMoveRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "file"), "x")
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.fs(codec.opts...)
			ctx := testCtx(t)
			base := "work-" + codec.name
			resp, err := c.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: base + "/a/b"}))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Msg.GetEntry().GetType() != filesystem.FileType_FILE_TYPE_DIRECTORY || resp.Msg.GetEntry().GetPath() != filepath.Join(e.home, base, "a", "b") {
				t.Errorf("MakeDir entry %v", resp.Msg.GetEntry())
			}
			_, err = c.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: base + "/a/b"}))
			wantCode(t, err, connect.CodeAlreadyExists)
			_, err = c.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: "file"}))
			wantCode(t, err, connect.CodeInvalidArgument)
			_, err = c.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: "file/sub"}))
			wantCode(t, err, connect.CodeInvalidArgument)

			mustWrite(t, filepath.Join(e.home, base, "a", "f.txt"), "data")
			mv, err := c.Move(ctx, connect.NewRequest(&filesystem.MoveRequest{Source: base + "/a/f.txt", Destination: base + "/new/dir/g.txt"}))
			if err != nil {
				t.Fatal(err)
			}
			if mv.Msg.GetEntry().GetName() != "g.txt" || mv.Msg.GetEntry().GetSize() != 4 {
				t.Errorf("Move entry %v", mv.Msg.GetEntry())
			}
			if got, _ := readFileString(filepath.Join(e.home, base, "new", "dir", "g.txt")); got != "data" {
				t.Errorf("moved content %q", got)
			}
			_, err = c.Move(ctx, connect.NewRequest(&filesystem.MoveRequest{Source: base + "/a/f.txt", Destination: base + "/x"}))
			wantCode(t, err, connect.CodeNotFound)

			if _, err := c.Remove(ctx, connect.NewRequest(&filesystem.RemoveRequest{Path: base})); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(e.home, base)); !os.IsNotExist(err) {
				t.Errorf("still there after Remove: %v", err)
			}
			// Removing what is not there succeeds, as in E2B.
			for _, gone := range []string{base, base + "/never/was"} {
				if _, err := c.Remove(ctx, connect.NewRequest(&filesystem.RemoveRequest{Path: gone})); err != nil {
					t.Errorf("remove missing %s: %v", gone, err)
				}
			}
			// A path below a file still fails.
			mustWrite(t, filepath.Join(e.home, base+"-file"), "x")
			_, err = c.Remove(ctx, connect.NewRequest(&filesystem.RemoveRequest{Path: base + "-file/below"}))
			if err == nil {
				t.Errorf("remove below a file succeeded")
			}
		})
	}
}

func TestListDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"top.txt", "d1/one.txt", "d1/d2/two.txt", "d1/d2/d3/three.txt"} {
		mustWrite(t, filepath.Join(e.home, "tree", p), p)
	}
	if err := os.Symlink(filepath.Join(e.home, "tree"), filepath.Join(e.home, "treelink")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		depth uint32
		want  []string
		code  connect.Code
	}{
		{"tree", 0, []string{"d1", "top.txt"}, 0},
		{"tree", 1, []string{"d1", "top.txt"}, 0},
		{"tree", 2, []string{"d1", "d1/d2", "d1/one.txt", "top.txt"}, 0},
		{"tree", 10, []string{"d1", "d1/d2", "d1/d2/d3", "d1/d2/d3/three.txt", "d1/d2/two.txt", "d1/one.txt", "top.txt"}, 0},
		{"treelink", 1, []string{"d1", "top.txt"}, 0},
		{"missing", 1, nil, connect.CodeNotFound},
		{"tree/top.txt", 1, nil, connect.CodeInvalidArgument},
	}
	for _, codec := range codecs {
		c := e.fs(codec.opts...)
		for _, tc := range cases {
			t.Run(codec.name+"/"+tc.path+"/"+strconv.Itoa(int(tc.depth)), func(t *testing.T) {
				resp, err := c.ListDir(testCtx(t), connect.NewRequest(&filesystem.ListDirRequest{Path: tc.path, Depth: tc.depth}))
				if tc.code != 0 {
					wantCode(t, err, tc.code)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				root := filepath.Join(e.home, tc.path)
				var got []string
				for _, en := range resp.Msg.GetEntries() {
					rel, err := filepath.Rel(root, en.GetPath())
					if err != nil || en.GetName() != filepath.Base(en.GetPath()) || en.GetType() == filesystem.FileType_FILE_TYPE_UNSPECIFIED {
						t.Errorf("bad entry %v", en)
					}
					got = append(got, rel)
				}
				sort.Strings(got)
				if strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Errorf("entries %v, want %v", got, tc.want)
				}
			})
		}
	}
}

func TestWatchDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.home, "w", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.fs(codec.opts...)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			req := connect.NewRequest(&filesystem.WatchDirRequest{Path: "w", Recursive: true, IncludeEntry: true})
			req.Header().Set("Keepalive-Ping-Interval", "0.05")
			s, err := c.WatchDir(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.Receive() || s.Msg().GetStart() == nil {
				t.Fatalf("first message %v %v", s.Msg(), s.Err())
			}
			name := "sub/" + codec.name + ".txt"
			mustWrite(t, filepath.Join(e.home, "w", name), "x")
			// A directory made after the watch started is watched too.
			newDir := filepath.Join(e.home, "w", "later-"+codec.name)
			if err := os.Mkdir(newDir, 0o755); err != nil {
				t.Fatal(err)
			}
			var created, wrote, keepalive, nested bool
			for !(created && wrote && keepalive && nested) && s.Receive() {
				if s.Msg().GetKeepalive() != nil {
					keepalive = true
					if err := os.WriteFile(filepath.Join(newDir, "n.txt"), []byte("n"), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				ev := s.Msg().GetFilesystem()
				switch {
				case ev.GetName() == name && ev.GetType() == filesystem.EventType_EVENT_TYPE_CREATE:
					created = true
					if ev.GetEntry().GetPath() != filepath.Join(e.home, "w", name) {
						t.Errorf("create event entry %v", ev.GetEntry())
					}
				case ev.GetName() == name && ev.GetType() == filesystem.EventType_EVENT_TYPE_WRITE:
					wrote = true
				case ev.GetName() == "later-"+codec.name+"/n.txt":
					nested = true
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	_, err := runWatch(t, e, "missing")
	wantCode(t, err, connect.CodeNotFound)
	mustWrite(t, filepath.Join(e.home, "plain"), "x")
	_, err = runWatch(t, e, "plain")
	wantCode(t, err, connect.CodeInvalidArgument)
}

func runWatch(t *testing.T, e *env, path string) (*filesystem.WatchDirResponse, error) {
	s, err := e.fs().WatchDir(testCtx(t), connect.NewRequest(&filesystem.WatchDirRequest{Path: path}))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if s.Receive() {
		return s.Msg(), nil
	}
	return nil, s.Err()
}

func TestPolledWatcher(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.home, "pw"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			c := e.fs(codec.opts...)
			ctx := testCtx(t)
			cw, err := c.CreateWatcher(ctx, connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "~/pw"}))
			if err != nil {
				t.Fatal(err)
			}
			id := cw.Msg.GetWatcherId()
			target := filepath.Join(e.home, "pw", codec.name)
			mustWrite(t, target, "1")
			if err := os.Remove(target); err != nil {
				t.Fatal(err)
			}
			var types []filesystem.EventType
			eventually(t, "create and remove events", func() bool {
				resp, err := c.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id}))
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range resp.Msg.GetEvents() {
					if ev.GetName() == codec.name {
						types = append(types, ev.GetType())
					}
				}
				return len(types) > 0 && types[len(types)-1] == filesystem.EventType_EVENT_TYPE_REMOVE
			})
			if types[0] != filesystem.EventType_EVENT_TYPE_CREATE {
				t.Errorf("events %v", types)
			}
			if _, err := c.RemoveWatcher(ctx, connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: id})); err != nil {
				t.Fatal(err)
			}
			_, err = c.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.RemoveWatcher(ctx, connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: id}))
			wantCode(t, err, connect.CodeNotFound)
		})
	}
}
