package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

func TestParseEnvdVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want envdVersion
		ok   bool
	}{
		{"0.6.13", envdVersion{0, 6, 13}, true},
		{"v0.1.0", envdVersion{0, 1, 0}, true},
		{"0.4.0-beta.1+build", envdVersion{0, 4, 0}, true},
		{"99.99.99", envdVersion{99, 99, 99}, true},
		{"", envdVersion{}, false},
		{"1.2", envdVersion{}, false},
		{"1.2.3.4", envdVersion{}, false},
		{"a.b.c", envdVersion{}, false},
		{"1.-2.3", envdVersion{}, false},
	} {
		got, ok := parseEnvdVersion(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseEnvdVersion(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if !(envdVersion{0, 3, 9}).less(envdVersion{0, 4, 0}) || (envdVersion{0, 4, 0}).less(envdVersion{0, 4, 0}) ||
		(envdVersion{1, 0, 0}).less(envdVersion{0, 9, 9}) {
		t.Error("less orders versions wrongly")
	}
}

// versionedSandbox attaches a sandbox reporting envd version v to f.
func versionedSandbox(t *testing.T, f *fakeEnvd, v string) *Sandbox {
	t.Helper()
	srv := fakeServer(t, f.handler())
	c := newTestClient(t, testConfig("http://127.0.0.1:1", srv.URL))
	return c.Attach("sbx1", AttachParams{AccessToken: "tok", EnvdVersion: v})
}

// TestEnvdDefaultUser: on envd before 0.4.0, which has no default user,
// every call that names no user names "user", as the SDKs do; later (and
// unknown) versions leave the choice to envd.
func TestEnvdDefaultUser(t *testing.T) {
	for _, c := range []struct {
		version string
		user    string
	}{{"0.3.9", "user"}, {"0.4.0", ""}, {"0.6.13", ""}, {"", ""}} {
		t.Run("envd "+c.version, func(t *testing.T) {
			var mu sync.Mutex
			var queries []url.Values
			f := &fakeEnvd{
				stat: func(*connect.Request[filesystem.StatRequest]) error { return nil },
				start: func(context.Context, *connect.Request[process.StartRequest], *connect.ServerStream[process.StartResponse]) error {
					return connect.NewError(connect.CodeUnimplemented, errors.New("not here"))
				},
				files: func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					queries = append(queries, r.URL.Query())
					mu.Unlock()
					if r.Method == http.MethodPost {
						_, _ = io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, `[{"name":"a","type":"file","path":"/a"}]`)
						return
					}
					_, _ = io.WriteString(w, "x")
				},
			}
			sb := versionedSandbox(t, f, c.version)
			ctx := context.Background()
			wantAuth := ""
			if c.user != "" {
				wantAuth = "Basic " + base64Std(c.user+":")
			}
			if _, err := sb.Files().Stat(ctx, "/a", FileOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := f.lastHeader().Get("Authorization"); got != wantAuth {
				t.Errorf("stat Authorization %q, want %q", got, wantAuth)
			}
			_, _ = sb.Commands().Run(ctx, "true", CommandOptions{})
			if got := f.lastHeader().Get("Authorization"); got != wantAuth {
				t.Errorf("command Authorization %q, want %q", got, wantAuth)
			}
			if _, err := sb.Files().ReadAll(ctx, "/a", ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := sb.Files().Write(ctx, "/a", strings.NewReader("x"), WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				if got := q.Get("username"); got != c.user {
					t.Errorf("files username %q, want %q", got, c.user)
				}
			}
			u, err := sb.DownloadURL("/a", SignedURLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pu, _ := url.Parse(u)
			if got := pu.Query().Get("username"); got != c.user {
				t.Errorf("signed URL username %q, want %q", got, c.user)
			}
			if got, want := pu.Query().Get("signature"), fileSignature("/a", "read", c.user, "tok", 0); got != want {
				t.Errorf("signed URL signature %q, want %q (signed for user %q)", got, want, c.user)
			}
		})
	}
}

// TestEnvdFeatureGates: calls an envd is too old for fail with
// ErrUnsupported before any request; from the version that has the feature
// on, they reach the sandbox.
func TestEnvdFeatureGates(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		old, recent string
		call        func(*Sandbox) error
	}{
		{"close stdin", "0.5.1", "0.5.2", func(sb *Sandbox) error { return sb.Commands().CloseStdin(ctx, 7) }},
		{"recursive watch", "0.1.3", "0.1.4", func(sb *Sandbox) error {
			_, err := sb.Files().Watch(ctx, "/home/user", WatchOptions{Recursive: true})
			return err
		}},
		{"metrics", "0.1.4", "0.1.5", func(sb *Sandbox) error {
			_, err := sb.Metrics(ctx, MetricsParams{})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeEnvd{}
			old := versionedSandbox(t, f, c.old)
			err := c.call(old)
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.recent) {
				t.Fatalf("on envd %s: %v, want ErrUnsupported naming %s", c.old, err, c.recent)
			}
			if n := f.hits.Load(); n != 0 {
				t.Fatalf("on envd %s the call still sent %d requests", c.old, n)
			}
			// The fakes answer these calls with errors of their own; what
			// matters is that the call was made.
			if err := c.call(versionedSandbox(t, f, c.recent)); errors.Is(err, ErrUnsupported) {
				t.Fatalf("on envd %s: %v", c.recent, err)
			}
		})
	}
}

// TestCreateRefusesAncientEnvd: a sandbox whose envd predates 0.1.0 is
// killed and the create fails with ErrUnsupported.
func TestCreateRefusesAncientEnvd(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	api := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, strings.Replace(sandboxJSON, `"0.6.13"`, `"0.0.9"`, 1))
	}))
	c := newTestClient(t, testConfig(api.URL, "http://127.0.0.1:1"))
	sb, err := c.Create(context.Background(), CreateParams{Template: "old-template"})
	if !errors.Is(err, ErrUnsupported) || sb != nil {
		t.Fatalf("create: %v, %v; want ErrUnsupported", sb, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[1] != "DELETE /sandboxes/abc123" {
		t.Fatalf("calls %v, want the create then the kill", calls)
	}
}

// TestWriteOnEnvdWithoutOctetUploads: envd before 0.5.7 takes uploads only
// as multipart forms, so Write sends its one file as a one-part form named
// by its path, with the path in the query too, as the official SDKs do;
// from 0.5.7 on (and on an unknown version) it streams the raw bytes.
func TestWriteOnEnvdWithoutOctetUploads(t *testing.T) {
	for _, c := range []struct {
		version, ctype, part string
	}{{"0.5.6", "multipart/form-data", "/d/f"}, {"0.5.7", "application/octet-stream", ""}, {"", "application/octet-stream", ""}} {
		t.Run("envd "+c.version, func(t *testing.T) {
			var ctype, part, body, path string
			f := &fakeEnvd{files: func(w http.ResponseWriter, r *http.Request) {
				mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				ctype, path = mt, r.URL.Query().Get("path")
				if mt == "multipart/form-data" {
					p, err := multipart.NewReader(r.Body, params["boundary"]).NextRawPart()
					if err != nil {
						t.Error(err)
						return
					}
					_, dp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
					part = dp["filename"]
					b, _ := io.ReadAll(p)
					body = string(b)
				} else {
					b, _ := io.ReadAll(r.Body)
					body = string(b)
				}
				_ = json.NewEncoder(w).Encode([]EntryInfo{{Name: "f", Path: "/d/f", Type: FileTypeFile}})
			}}
			e, err := versionedSandbox(t, f, c.version).Files().Write(context.Background(), "/d/f", strings.NewReader("data"), WriteOptions{})
			if err != nil || e.Path != "/d/f" {
				t.Fatalf("write = %+v, %v", e, err)
			}
			if ctype != c.ctype || part != c.part || body != "data" || path != "/d/f" {
				t.Errorf("sent %s (part %q, path %q) %q, want %s (part %q)", ctype, part, path, body, c.ctype, c.part)
			}
		})
	}
}
