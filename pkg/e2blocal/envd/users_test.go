//go:build linux

package envd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// testUID is the sandbox user of the two-account server; no passwd entry
// is needed.
const testUID = 4242

const basicRoot = "Basic cm9vdDo=" // root:

// usersEnv is a server with the sandbox's two accounts, as the agent
// configures it with root: the default user (testUID) and root, each with
// its own home, and base, a root-owned directory both may traverse.
type usersEnv struct {
	*env
	userHome, rootHome, base string
}

func newUsersEnv(t *testing.T, token string) *usersEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("acting as another account needs root")
	}
	top := t.TempDir()
	// The test's temp dirs are private to root; the user must pass them.
	for _, d := range []string{filepath.Dir(top), top} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u := &usersEnv{userHome: filepath.Join(top, "home", "user"), rootHome: filepath.Join(top, "root"), base: filepath.Join(top, "base")}
	for _, d := range []string{u.userHome, u.rootHome, u.base} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(u.userHome, testUID, testUID); err != nil {
		t.Fatal(err)
	}
	u.env = newEnv(t, func(c *Config) {
		c.Home, c.AccessToken = u.userHome, token
		c.Accounts = map[string]Account{
			"user": {UID: testUID, GID: testUID, Home: u.userHome},
			"root": {UID: 0, GID: 0, Home: u.rootHome},
		}
	})
	return u
}

func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Uid
}

// TestUploadMakesParentsForTheUser: an upload whose parents are missing in
// a directory the user cannot create in gets them as E2B gives them: made
// by root and owned by the user, as is the file; several files at once, as
// the SDK's files.write sends them.
func TestUploadMakesParentsForTheUser(t *testing.T) {
	t.Parallel()
	u := newUsersEnv(t, "")
	a, b := filepath.Join(u.base, "x", "a.txt"), filepath.Join(u.base, "y", "z", "b.txt")
	body, ctype := multipartBody(t, [][2]string{{a, "alpha"}, {b, "beta"}, {"rel.txt", "home"}})
	status, _, raw := do(t, "POST", filesURL(u.url, map[string]string{"username": "user"}), body, map[string]string{"Content-Type": ctype})
	if status != 200 {
		t.Fatalf("upload %d %s", status, raw)
	}
	for _, p := range []string{a, b, filepath.Dir(a), filepath.Dir(b), filepath.Dir(filepath.Dir(b)), filepath.Join(u.userHome, "rel.txt")} {
		if got := ownerOf(t, p); got != testUID {
			t.Errorf("%s owned by %d, want %d", p, got, testUID)
		}
	}
	if got := ownerOf(t, u.base); got != 0 {
		t.Errorf("existing parent %s changed owner to %d", u.base, got)
	}
	// A parent that is a file is still the client's mistake.
	mustWrite(t, filepath.Join(u.base, "file"), "")
	status, _, raw = do(t, "POST", filesURL(u.url, map[string]string{"path": filepath.Join(u.base, "file", "c.txt")}),
		strings.NewReader("c"), map[string]string{"Content-Type": "application/octet-stream"})
	checkRESTError(t, status, raw, 400)
}

// TestPathsResolveAgainstTheRequestUser: a relative path resolves against
// the home of the user the request names (root's for `root`), in uploads,
// signed or not, downloads and every filesystem call and a command's cwd.
func TestPathsResolveAgainstTheRequestUser(t *testing.T) {
	t.Parallel()
	const token = "tok"
	u := newUsersEnv(t, token)
	future := time.Now().Add(time.Hour).Unix()
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	withToken := map[string]string{"Content-Type": "application/octet-stream", accessTokenHeader: token}
	uploads := []struct {
		name, user, path string
		signed           bool
		want             string
	}{
		{"root, token", "root", "up/t.txt", false, filepath.Join(u.rootHome, "up", "t.txt")},
		{"root, signed", "root", "up/s.txt", true, filepath.Join(u.rootHome, "up", "s.txt")},
		{"root, tilde", "root", "~/tilde.txt", true, filepath.Join(u.rootHome, "tilde.txt")},
		{"user, signed", "user", "up/u.txt", true, filepath.Join(u.userHome, "up", "u.txt")},
		{"default user", "", "up/d.txt", false, filepath.Join(u.userHome, "up", "d.txt")},
	}
	for _, c := range uploads {
		t.Run("upload "+c.name, func(t *testing.T) {
			q, h := map[string]string{"path": c.path}, withToken
			if c.user != "" {
				q["username"] = c.user
			}
			if c.signed {
				q["signature"] = FileSignature(c.path, opWrite, c.user, token, &future)
				q["signature_expiration"] = strconv.FormatInt(future, 10)
				h = octet
			}
			status, _, raw := do(t, "POST", filesURL(u.url, q), strings.NewReader(c.name), h)
			if status != 200 {
				t.Fatalf("upload %d %s", status, raw)
			}
			var got uploaded
			if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got[0].Path != c.want {
				t.Fatalf("answer %s, want path %s", raw, c.want)
			}
			if s, err := readFileString(c.want); err != nil || s != c.name {
				t.Errorf("%s holds %q (%v)", c.want, s, err)
			}
			q = map[string]string{"path": c.path, "signature": FileSignature(c.path, opRead, c.user, token, nil)}
			if c.user != "" {
				q["username"] = c.user
			}
			if status, _, raw := do(t, "GET", filesURL(u.url, q), nil, nil); status != 200 || string(raw) != c.name {
				t.Errorf("download %d %q", status, raw)
			}
		})
	}
	t.Run("filesystem calls as root", func(t *testing.T) {
		fs := u.fs(connect.WithInterceptors(authHeaders(token, basicRoot)))
		ctx := testCtx(t)
		made, err := fs.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: "made/deep"}))
		if err != nil || made.Msg.GetEntry().GetPath() != filepath.Join(u.rootHome, "made", "deep") {
			t.Fatalf("make_dir %v %v", made, err)
		}
		st, err := fs.Stat(ctx, connect.NewRequest(&filesystem.StatRequest{Path: "made"}))
		if err != nil || st.Msg.GetEntry().GetPath() != filepath.Join(u.rootHome, "made") {
			t.Fatalf("stat %v %v", st, err)
		}
		ls, err := fs.ListDir(ctx, connect.NewRequest(&filesystem.ListDirRequest{Path: "made"}))
		if err != nil || len(ls.Msg.GetEntries()) != 1 || ls.Msg.GetEntries()[0].GetPath() != filepath.Join(u.rootHome, "made", "deep") {
			t.Fatalf("list %v %v", ls, err)
		}
		w, err := fs.CreateWatcher(ctx, connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "made"}))
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if _, err := fs.RemoveWatcher(ctx, connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: w.Msg.GetWatcherId()})); err != nil {
			t.Fatal(err)
		}
		mv, err := fs.Move(ctx, connect.NewRequest(&filesystem.MoveRequest{Source: "made", Destination: "moved/here"}))
		if err != nil || mv.Msg.GetEntry().GetPath() != filepath.Join(u.rootHome, "moved", "here") {
			t.Fatalf("move %v %v", mv, err)
		}
		if _, err := fs.Remove(ctx, connect.NewRequest(&filesystem.RemoveRequest{Path: "moved"})); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(u.rootHome, "moved")); !os.IsNotExist(err) {
			t.Errorf("remove left %v", err)
		}
	})
	t.Run("make_dir as user in a root directory", func(t *testing.T) {
		fs := u.fs(connect.WithInterceptors(authHeaders(token, "")))
		dir := filepath.Join(u.base, "mk", "deep")
		if _, err := fs.MakeDir(testCtx(t), connect.NewRequest(&filesystem.MakeDirRequest{Path: dir})); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{dir, filepath.Dir(dir)} {
			if got := ownerOf(t, p); got != testUID {
				t.Errorf("%s owned by %d", p, got)
			}
		}
	})
	t.Run("command cwd", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(u.rootHome, "cwd"), 0o755); err != nil {
			t.Fatal(err)
		}
		cwd := "cwd"
		req := connect.NewRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "/bin/pwd", Cwd: &cwd}})
		req.Header().Set("Authorization", basicRoot)
		req.Header().Set(accessTokenHeader, token)
		r := mustRun(t, testCtx(t), u.proc(), req)
		if got := strings.TrimSpace(r.stdout); got != filepath.Join(u.rootHome, "cwd") {
			t.Errorf("cwd %q", got)
		}
	})
}

// authHeaders sets the access token and, when given, the Basic user on
// every call.
func authHeaders(token, basic string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(accessTokenHeader, token)
			if basic != "" {
				req.Header().Set("Authorization", basic)
			}
			return next(ctx, req)
		}
	}
}
