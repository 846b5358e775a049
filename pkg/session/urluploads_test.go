package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

func TestUploadFileName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	tests := []struct {
		name, given, url, want string
	}{
		{"server name wins", "report.csv", "https://cdn.example.com/a/b.bin", "report.csv"},
		{"url segment", "", "https://cdn.example.com/a/data%20set.csv?sig=1#frag", "data set.csv"},
		{"no segment", "", "https://cdn.example.com/", "download"},
		{"traversal", "../../etc/passwd", "https://x/y", "passwd"},
		{"windows path", `C:\Users\me\notes.txt`, "https://x/y", "notes.txt"},
		{"dotfile", ".bashrc", "https://x/y", "bashrc"},
		{"dots only", "..", "https://x/..", "download"},
		{"control characters", "a\x00b\nc.txt", "https://x/y", "a_b_c.txt"},
		{"invalid UTF-8", "caf\xe9.txt", "https://x/y", "caf_.txt"},
		{"spaces", "  spaced.txt  ", "https://x/y", "spaced.txt"},
		{"unicode", "€ rates.txt", "https://x/y", "€ rates.txt"},
		{"too long keeps extension", long + ".csv", "https://x/y", strings.Repeat("x", 251) + ".csv"},
		{"encoded slash in segment", "", "https://x/a%2Fb.txt", "b.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := uploadFileName(tt.given, tt.url); got != tt.want {
				t.Fatalf("uploadFileName(%q, %q) = %q, want %q", tt.given, tt.url, got, tt.want)
			}
		})
	}
}

func TestUploadBatchClaimsUniqueNames(t *testing.T) {
	t.Parallel()
	b := &uploadBatch{names: map[string]bool{}}
	var got []string
	for _, n := range []string{"a.txt", "a.txt", "a.txt", "b", "b", "a (1).txt", "archive.tar.gz", "archive.tar.gz"} {
		got = append(got, b.claim(n))
	}
	want := []string{"a.txt", "a (1).txt", "a (2).txt", "b", "b (1)", "a (1) (1).txt", "archive.tar.gz", "archive.tar (1).gz"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("claimed %q, want %q", got, want)
	}
	long := strings.Repeat("y", 255)
	b.claim(long)
	if again := b.claim(long); len(again) > maxFileNameBytes || !strings.HasSuffix(again, " (1)") {
		t.Fatalf("second claim of a 255-byte name = %q (%d bytes)", again, len(again))
	}
}

func TestValidateUploadURLs(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxUploadURLs+1)
	for i := range many {
		many[i] = "https://example.com/f"
	}
	tests := []struct {
		name string
		urls []string
		kind error
		want string
	}{
		{"none", nil, ErrInvalid, "at least one URL"},
		{"too many", many, ErrTooLarge, "201 URLs, more than the limit of 200"},
		{"scheme", []string{"https://ok.example/a", "ftp://x/y", "file:///etc/passwd"}, ErrInvalid, `urls[1] has scheme "ftp"`},
		{"both named", []string{"ftp://x/y", "/relative"}, ErrInvalid, `urls[0] has scheme "ftp": only http and https are fetched; urls[1] is not an absolute URL`},
		{"no host", []string{"http:///path"}, ErrInvalid, "urls[0] has no host"},
		{"too long", []string{"https://x/" + strings.Repeat("a", MaxUploadURLBytes)}, ErrInvalid, "urls[0] is longer than 4096 bytes"},
		{"good", []string{"http://example.com/a", "https://example.com:8443/b?c=d"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateUploadURLs(tt.urls)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("ValidateUploadURLs: %v", err)
				}
				return
			}
			if err == nil || !isKind(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidateUploadURLs = %v, want %v naming %q", err, tt.kind, tt.want)
			}
		})
	}
}

func isKind(err, kind error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == kind
}

// fakeFetcher serves bodies from a table; a missing URL fails as a server
// would that answered 404.
type fakeFetcher map[string]fakeFetch

type fakeFetch struct {
	name, body string
	size       int64 // announced; -1 unknown
}

func (f fakeFetcher) Fetch(ctx context.Context, rawURL string) (*FetchedURL, error) {
	r, ok := f[rawURL]
	if !ok {
		return nil, Errorf(ErrUnavailable, "example.com answered 404 Not Found")
	}
	return &FetchedURL{Body: io.NopCloser(strings.NewReader(r.body)), Name: r.name, Size: r.size}, nil
}

func TestUploadURLsOnFakes(t *testing.T) {
	t.Parallel()
	fetch := fakeFetcher{
		"https://example.com/a":     {name: "a.txt", body: "alpha", size: 5},
		"https://example.com/short": {name: "short.txt", body: "abc", size: 10},
		"https://example.com/b.csv": {body: "x,y\n", size: -1},
	}
	t.Run("partial success in the order given", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{})
		r.m.fetcher = fetch
		urls := []string{"https://example.com/missing", "https://example.com/a", "https://example.com/short", "https://example.com/b.csv"}
		res, err := r.m.UploadURLs(context.Background(), testKey, URLUploadRequest{URLs: urls})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != URLUploadPartialSuccess || len(res.Uploaded) != 2 || len(res.Errors) != 2 ||
			res.Uploaded[0] != (URLUploaded{urls[1], "/home/user/a.txt", 5}) || res.Uploaded[1] != (URLUploaded{urls[3], "/home/user/b.csv", 4}) ||
			res.Errors[0] != (URLUploadError{urls[0], "example.com answered 404 Not Found"}) ||
			res.Errors[1] != (URLUploadError{urls[2], "the server sent 3 of the 10 bytes it announced"}) {
			t.Fatalf("result %+v", res)
		}
		s, _ := r.store.GetSession(context.Background(), testKey)
		if _, ok := r.sbx.boxes[s.SandboxID].files["/home/user/short.txt"]; ok {
			t.Fatal("the short file was left behind")
		}
	})
	t.Run("a sandbox gone before anything landed is replaced", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{})
		r.m.fetcher = fetch
		r.mustStart(t, context.Background(), testKey, StartOptions{})
		var once sync.Once
		r.sbx.fail = func(op, id string) error {
			var err error
			if op == "WriteFile" {
				once.Do(func() {
					r.sbx.vanish(id)
					err = fmt.Errorf("write: %w", ErrSandboxGone)
				})
			}
			return err
		}
		res, err := r.m.UploadURLs(context.Background(), testKey, URLUploadRequest{URLs: []string{"https://example.com/a"}, DestDir: "in"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != URLUploadSuccess || !res.Restarted || res.Uploaded[0].Path != "/home/user/in/a.txt" {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{})
		_, err := r.m.UploadURLs(context.Background(), testKey, URLUploadRequest{URLs: []string{"https://example.com/a"}})
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("bad destDir", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{})
		r.m.fetcher = fetch
		_, err := r.m.UploadURLs(context.Background(), testKey, URLUploadRequest{URLs: []string{"https://example.com/a"}, DestDir: "a\x00b"})
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "destDir: ") {
			t.Fatalf("err = %v, want ErrInvalid naming destDir", err)
		}
	})
}
