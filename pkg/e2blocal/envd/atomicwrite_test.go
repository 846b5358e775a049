//go:build linux

package envd

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// uploadTemps lists the hidden files uploads write aside in dir.
func uploadTemps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if isUploadTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitNoTemps polls until no upload is being written in dir.
func waitNoTemps(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(uploadTemps(t, dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("upload files left in %s: %v", dir, uploadTemps(t, dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFailedUploadKeepsOldFile: an upload whose body breaks off or is
// corrupt leaves the file it would have replaced as it was, and nothing of
// itself.
func TestFailedUploadKeepsOldFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	truncatedGzip := gz(t, bytes.Repeat([]byte("new content "), 100000))
	truncatedGzip = truncatedGzip[:len(truncatedGzip)/2]
	for _, tc := range []struct {
		name string
		send func(t *testing.T, name string)
	}{
		{"truncated multipart", func(t *testing.T, name string) {
			body := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + name + "\"\r\n\r\n" + strings.Repeat("n", 1<<20)
			status, _, resp := do(t, "POST", filesURL(e.url, nil), strings.NewReader(body), map[string]string{"Content-Type": "multipart/form-data; boundary=b"})
			checkRESTError(t, status, resp, 400)
		}},
		{"gzip body cut short", func(t *testing.T, name string) {
			status, _, resp := do(t, "POST", filesURL(e.url, map[string]string{"path": name}), bytes.NewReader(truncatedGzip),
				map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
			checkRESTError(t, status, resp, 400)
		}},
		{"client hangs up mid-body", func(t *testing.T, name string) {
			u, err := url.Parse(filesURL(e.url, map[string]string{"path": name}))
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				u.RequestURI(), u.Host, octet["Content-Type"], 4<<20, strings.Repeat("n", 1<<20))
			// The body is being written aside before the hang-up.
			deadline := time.Now().Add(10 * time.Second)
			for len(uploadTemps(t, e.home)) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			_ = conn.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-") + ".txt"
			path := filepath.Join(e.home, name)
			mustWrite(t, path, "old")
			tc.send(t, name)
			waitNoTemps(t, e.home)
			if got := readFile(t, path); got != "old" {
				t.Fatalf("file after the failed upload: %.40q (%d bytes)", got, len(got))
			}
		})
	}
}

// TestUploadReplacesLikeADirectWrite: what an upload leaves is what
// writing the file directly would leave, apart from the moment it shows.
func TestUploadReplacesLikeADirectWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	upload := func(t *testing.T, path, body string) {
		t.Helper()
		status, _, resp := do(t, "POST", filesURL(e.url, map[string]string{"path": path}), strings.NewReader(body), map[string]string{"Content-Type": "application/octet-stream"})
		if status != 200 {
			t.Fatalf("upload %s: %d %s", path, status, resp)
		}
	}
	mode := func(t *testing.T, path string) os.FileMode {
		t.Helper()
		info, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return info.Mode()
	}
	at := func(name string) string { return filepath.Join(e.home, name) }

	t.Run("a replaced file keeps its mode", func(t *testing.T) {
		mustWrite(t, at("mode.txt"), "old")
		if err := os.Chmod(at("mode.txt"), 0o640|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		upload(t, "mode.txt", "new")
		if got := mode(t, at("mode.txt")); got != 0o640|os.ModeSticky || readFile(t, at("mode.txt")) != "new" {
			t.Fatalf("mode %v, content %q", got, readFile(t, at("mode.txt")))
		}
	})
	t.Run("a new file gets the umask's mode", func(t *testing.T) {
		f, err := os.OpenFile(at("direct.txt"), os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		upload(t, "fresh.txt", "new")
		if got, want := mode(t, at("fresh.txt")), mode(t, at("direct.txt")); got != want {
			t.Fatalf("uploaded file mode %v, direct create %v", got, want)
		}
	})
	t.Run("a symlink's target is written", func(t *testing.T) {
		mustWrite(t, at("target.txt"), "old")
		if err := os.Symlink("target.txt", at("link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("missing.txt", at("dangling")); err != nil {
			t.Fatal(err)
		}
		upload(t, "link", "via link")
		upload(t, "dangling", "made through a dangling link")
		if mode(t, at("link"))&os.ModeSymlink == 0 || mode(t, at("dangling"))&os.ModeSymlink == 0 {
			t.Fatal("an upload replaced a symlink")
		}
		if readFile(t, at("target.txt")) != "via link" || readFile(t, at("missing.txt")) != "made through a dangling link" {
			t.Fatal("a symlink's target was not written")
		}
	})
	t.Run("hard links keep sharing the file", func(t *testing.T) {
		mustWrite(t, at("a.txt"), "old")
		if err := os.Link(at("a.txt"), at("b.txt")); err != nil {
			t.Fatal(err)
		}
		upload(t, "a.txt", "shared")
		if readFile(t, at("b.txt")) != "shared" {
			t.Fatalf("the other link has %q", readFile(t, at("b.txt")))
		}
	})
	t.Run("root replacing another user's file keeps its owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the file another owner")
		}
		mustWrite(t, at("theirs.txt"), "old")
		if err := os.Chown(at("theirs.txt"), 4321, 4322); err != nil {
			t.Fatal(err)
		}
		upload(t, "theirs.txt", "new")
		info, err := os.Stat(at("theirs.txt"))
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != 4321 || st.Gid != 4322 || readFile(t, at("theirs.txt")) != "new" {
			t.Fatalf("owner %d:%d, content %q", st.Uid, st.Gid, readFile(t, at("theirs.txt")))
		}
	})
	t.Run("listings leave out uploads in progress", func(t *testing.T) {
		mustWrite(t, at(uploadTempPrefix+"inflight"), "partial")
		resp, err := e.fs().ListDir(testCtx(t), connect.NewRequest(&filesystem.ListDirRequest{Path: e.home}))
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range resp.Msg.GetEntries() {
			if isUploadTemp(entry.GetName()) {
				t.Fatalf("listing shows %s", entry.GetName())
			}
		}
		if len(resp.Msg.GetEntries()) == 0 {
			t.Fatal("empty listing")
		}
	})
}
