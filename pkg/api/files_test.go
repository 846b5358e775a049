package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestReadFileContent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path, contentType string
	}{
		{"data.csv", "text/csv; charset=utf-8"},
		{"/tmp/plot.png", "image/png"},
		{"page.html", "text/html; charset=utf-8"},
		{"blob.unknownext", "application/octet-stream"},
		{"noext", "application/octet-stream"},
	}
	h := newHarness(t)
	var gotPath string
	h.fake.read = func(_ context.Context, _ session.Key, p string) (io.ReadCloser, session.FileEntry, error) {
		gotPath = p
		return io.NopCloser(strings.NewReader("a,b\n1,2\n")), session.FileEntry{Name: "x", Path: p, Type: "file", Size: 8, ModifiedAt: fakeNow}, nil
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := h.do(call{method: "GET", path: "/v1/sessions/s1/files/content?path=" + tc.path})
			if resp.StatusCode != 200 || string(body) != "a,b\n1,2\n" {
				t.Fatalf("status %d body %q", resp.StatusCode, body)
			}
			hd := resp.Header
			if hd.Get("Content-Type") != tc.contentType || hd.Get("Content-Length") != "8" ||
				hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Content-Security-Policy") != "sandbox" ||
				hd.Get("Last-Modified") != fakeNow.Format(http.TimeFormat) {
				t.Fatalf("headers %v", hd)
			}
			want := tc.path
			if !strings.HasPrefix(want, "/") {
				want = "/home/user/" + want
			}
			if gotPath != want {
				t.Fatalf("manager read %q, want %q", gotPath, want)
			}
		})
	}
}

func TestWriteFileContentStreamsBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var got string
	h.fake.write = func(_ context.Context, _ session.Key, p string, r io.Reader) (session.FileEntry, error) {
		b, err := io.ReadAll(r)
		got = string(b)
		return session.FileEntry{Name: "f.bin", Path: p, Type: "file", Size: int64(len(b)), ModifiedAt: fakeNow}, err
	}
	resp, body := h.do(call{method: "PUT", path: "/v1/sessions/s1/files/content?path=dir/f.bin", body: "\x00\x01binary",
		headers: map[string]string{"Content-Type": "application/octet-stream"}})
	if resp.StatusCode != 200 || got != "\x00\x01binary" {
		t.Fatalf("status %d body %s; manager got %q", resp.StatusCode, body, got)
	}
	if want := `{"name":"f.bin","path":"/home/user/dir/f.bin","type":"file","size":8,"modifiedAt":"2026-01-02T03:04:05Z"}`; strings.TrimSpace(string(body)) != want {
		t.Fatalf("body %s", body)
	}
}
