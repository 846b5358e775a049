package urlfetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/urlfetch"
	"github.com/sessionbox/sessionbox/pkg/urlfetch/urlfetchtest"
)

// publicName is a name that looks public but that the test's resolver
// points at the loopback test server.
const publicName = "files.example.com"

// testServer serves /file with a Content-Disposition name, /hop/N as a
// chain of N redirects ending at /file, and /to?u=URL as a redirect to URL.
func testServer(t *testing.T) (port string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
		_, _ = io.WriteString(w, "a,b\n1,2\n")
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		next := "/file"
		if n > 1 {
			next = fmt.Sprintf("/hop/%d", n-1)
		}
		http.Redirect(w, r, next, http.StatusFound)
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("/missing", http.NotFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func newFetcher(t *testing.T, allowPrivate bool) *urlfetch.Fetcher {
	t.Helper()
	f := urlfetch.New(urlfetch.Options{
		AllowPrivate: allowPrivate,
		Resolver: urlfetchtest.Resolver(map[string][]netip.Addr{
			publicName:           {netip.MustParseAddr("127.0.0.1")},
			"metadata.example":   {netip.MustParseAddr("169.254.169.254")},
			"mapped.example.com": {netip.MustParseAddr("::ffff:127.0.0.1")},
		}),
	})
	t.Cleanup(f.Close)
	return f
}

func TestFetchRefusesForbiddenAddresses(t *testing.T) {
	t.Parallel()
	port := testServer(t)
	f := newFetcher(t, false)
	tests := []struct {
		name, url, want string
	}{
		{"public name resolving to loopback", "http://" + publicName + ":" + port + "/file", "127.0.0.1, a loopback address"},
		{"loopback literal", "http://127.0.0.1:" + port + "/file", "loopback"},
		{"IPv6 loopback", "http://[::1]:" + port + "/file", "loopback"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/file", "loopback"},
		{"mapped answer from DNS", "http://mapped.example.com:" + port + "/file", "loopback"},
		{"metadata by name", "http://metadata.example/latest/meta-data/", "169.254.169.254, a cloud metadata address"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"private", "http://10.0.0.1/", "private"},
		{"shared", "http://100.64.0.1/", "carrier-grade NAT"},
		{"link-local", "http://169.254.10.10/", "link-local"},
		{"unique-local", "http://[fd00::1]/", "IPv6 unique-local"},
		{"multicast", "http://224.0.0.1/", "multicast"},
		{"unspecified", "http://0.0.0.0:" + port + "/file", "unspecified"},
		{"broadcast", "http://255.255.255.255/", "broadcast"},
		{"reserved", "http://240.0.0.1/", "reserved"},
		{"NAT64 of private", "http://[64:ff9b::a00:1]/", "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := f.Fetch(ctx, tt.url)
			if err == nil {
				_ = got.Body.Close()
				t.Fatalf("Fetch(%s) succeeded", tt.url)
			}
			if !errors.Is(err, session.ErrForbidden) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "refused: ") {
				t.Fatalf("Fetch(%s) = %v, want a refusal naming %q", tt.url, err, tt.want)
			}
		})
	}
}

func TestFetchAllowPrivate(t *testing.T) {
	t.Parallel()
	port := testServer(t)
	f := newFetcher(t, true)
	ctx := context.Background()
	got, err := f.Fetch(ctx, "http://"+publicName+":"+port+"/file")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	defer got.Body.Close()
	body, err := io.ReadAll(got.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != "a,b\n1,2\n" || got.Name != "report.csv" || got.Size != int64(len(body)) {
		t.Fatalf("got name %q size %d body %q", got.Name, got.Size, body)
	}
	// Cloud metadata stays out of reach even so.
	if _, err := f.Fetch(ctx, "http://169.254.169.254/latest/meta-data/"); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("metadata with AllowPrivate: %v, want refused", err)
	}
}

func TestFetchRedirects(t *testing.T) {
	t.Parallel()
	port := testServer(t)
	f := newFetcher(t, true)
	base := "http://" + publicName + ":" + port
	tests := []struct {
		name, url string
		want      string // "" for success
	}{
		{"five redirects", base + "/hop/5", ""},
		{"six redirects", base + "/hop/6", "more than 5 redirects"},
		{"to cloud metadata", base + "/to?u=http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 connects to 169.254.169.254, a cloud metadata address"},
		{"to a name resolving to metadata", base + "/to?u=http://metadata.example/x", "refused: metadata.example connects to 169.254.169.254"},
		{"to multicast", base + "/to?u=http://[ff02::1]/", "multicast"},
		{"to file", base + "/to?u=file:///etc/passwd", "neither http nor https"},
		{"not found", base + "/missing", "answered 404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := f.Fetch(context.Background(), tt.url)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				_ = got.Body.Close()
				if got.Name != "report.csv" {
					t.Fatalf("name %q", got.Name)
				}
				return
			}
			if err == nil {
				_ = got.Body.Close()
				t.Fatalf("Fetch(%s) succeeded, want %q", tt.url, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fetch(%s) = %v, want %q", tt.url, err, tt.want)
			}
		})
	}
}

// TestFetchIgnoresProxyEnvironment: a proxy from the environment would dial
// on the fetcher's behalf, out of the guard's sight.
func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	f := newFetcher(t, false)
	_, err := f.Fetch(context.Background(), "http://"+publicName+"/file")
	if !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("Fetch through a proxy from the environment: %v, want refused", err)
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy got %d requests", n)
	}
}

func TestFetchFailuresAreWords(t *testing.T) {
	t.Parallel()
	f := newFetcher(t, true)
	// A port nothing listens on: bind one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	tests := []struct{ url, want string }{
		{"http://nowhere.example.com/x", "nowhere.example.com could not be resolved"},
		{"http://" + closed + "/x", "could not fetch from " + closed},
		{"ftp://example.com/x", "not an http or https URL"},
	}
	for _, tt := range tests {
		_, err := f.Fetch(context.Background(), tt.url)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Fetch(%s) = %v, want %q", tt.url, err, tt.want)
		}
	}
}

func TestFetchHeaderTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	f := urlfetch.New(urlfetch.Options{AllowPrivate: true, HeaderTimeout: 200 * time.Millisecond})
	defer f.Close()
	_, err := f.Fetch(context.Background(), srv.URL)
	if !errors.Is(err, session.ErrTimeout) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("Fetch of a silent server: %v, want a timeout", err)
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	tests := []struct{ header, want string }{
		{`attachment; filename="report.csv"`, "report.csv"},
		{`attachment; filename=plain.txt`, "plain.txt"},
		{`attachment; filename="fallback.txt"; filename*=UTF-8''%E2%82%AC%20rates.txt`, "€ rates.txt"},
		{`attachment; filename*=UTF-8''%E2%82%AC%20rates.txt; filename="fallback.txt"`, "€ rates.txt"},
		{`attachment; filename*=iso-8859-1'en'%A3%20rates.txt`, "£ rates.txt"},
		{`inline; filename="../../etc/passwd"`, "../../etc/passwd"}, // sanitized by the caller
		{`attachment`, ""},
		{``, ""},
		{`attachment; filename*=koi8-r''%F0`, ""},
	}
	for _, tt := range tests {
		if got := urlfetch.FileName(tt.header); got != tt.want {
			t.Errorf("FileName(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
}

func TestFetchHTTPS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename*=UTF-8''secure%20notes.txt`)
		_, _ = io.WriteString(w, "over TLS")
	}))
	t.Cleanup(srv.Close) // the subtests run after this function returns
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resolver := urlfetchtest.Resolver(map[string][]netip.Addr{"example.com": {netip.MustParseAddr("127.0.0.1")}})
	tests := []struct {
		name   string
		opts   urlfetch.Options
		want   string // error; "" for success
		status int
	}{
		{"trusted", urlfetch.Options{AllowPrivate: true, Resolver: resolver, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}, "", 0},
		{"untrusted", urlfetch.Options{AllowPrivate: true, Resolver: resolver}, "example.com:" + port + " presented a certificate that is not trusted", 0},
		{"refused before any handshake", urlfetch.Options{Resolver: resolver, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}, "a loopback address", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := urlfetch.New(tt.opts)
			defer f.Close()
			// httptest's certificate is for example.com.
			got, err := f.Fetch(context.Background(), "https://example.com:"+port+"/x")
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Fetch = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer got.Body.Close()
			body, _ := io.ReadAll(got.Body)
			if string(body) != "over TLS" || got.Name != "secure notes.txt" {
				t.Fatalf("got %q named %q", body, got.Name)
			}
		})
	}
}
