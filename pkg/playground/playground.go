// Package playground serves a small web page for trying sessionbox from a
// browser: paste an API key, pick a session, run code with live output and
// rich results, manage files, install packages, reset and stop.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary (no build
// step) and uses only the public API, from the page's own origin, with the
// key the user pastes; the key stays in the tab's sessionStorage. Local
// serve answers "/" with it, and so does the status function behind the
// deployed stack's API URL unless the stack was synthesized without it.
//
// The page loads no inline script or style, so its Content-Security-Policy
// allows scripts, styles and connections from its own origin only, plus the
// origins that presigned uploads go to (ConnectSources).
package playground

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetPrefix is the path below which the page's script, style sheet and
// icon are served. The page names them relative to itself, so it also works
// below a path prefix such as an API Gateway stage.
const AssetPrefix = "/playground/"

// Options configure the page's handler.
type Options struct {
	// ConnectSources are origins the page may send requests to besides its
	// own: where presigned upload URLs point (the local S3 stand-in, or
	// "https://*.amazonaws.com" in production). Uploads up to the inline
	// limit need none.
	ConnectSources []string
	// ClientPath, when set, returns the page's path as the browser asked
	// for it, e.g. "/prod" below an API Gateway stage. Asked for without
	// its trailing slash, the page redirects to it: its files are named
	// relative to it and would resolve outside the stage.
	ClientPath func(*http.Request) string
}

// AWSUploads is where presigned S3 URLs point in production: virtual-hosted
// bucket names under amazonaws.com.
const AWSUploads = "https://*.amazonaws.com"

// UploadOrigin is the connect source for presigned URLs made by an S3 client
// with this endpoint override: its scheme and host, or AWSUploads when
// there is none (real S3). A loopback endpoint (local mode's S3 stand-in)
// is named with any port: the page is served to anyone who can reach it,
// and needs no more than "this machine" to reach its uploads.
func UploadOrigin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return AWSUploads
	}
	if isLoopback(u.Hostname()) {
		return u.Scheme + "://" + hostForCSP(u.Hostname()) + ":*"
	}
	return u.Scheme + "://" + u.Host
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostForCSP brackets an IPv6 literal, as a CSP host source needs.
func hostForCSP(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// asset is one embedded file, ready to serve.
type asset struct {
	name        string
	contentType string
	body        []byte
	etag        string
}

// Handler serves GET and HEAD of "/" (the page) and of AssetPrefix+name (its
// files); anything else is 404. Use With to put it in front of the API.
func Handler(opts Options) http.Handler {
	assets, err := load()
	if err != nil {
		// The files are compiled in; failing to read them is a build error.
		panic(err)
	}
	csp := policy(opts.ConnectSources)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", withSlash(opts.ClientPath, serveAsset(assets["index.html"], csp)))
	for name, a := range assets {
		if name != "index.html" {
			mux.Handle("GET "+AssetPrefix+name, serveAsset(a, csp))
		}
	}
	return mux
}

// With answers the page's paths with the page and every other request with
// api, which keeps its own answers (problems) for unknown routes and methods.
func With(api http.Handler, opts Options) http.Handler {
	page := Handler(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPage(r) {
			page.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// isPage reports whether r asks for the page or one of its files.
func isPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if p == "/" {
		return true
	}
	name, ok := strings.CutPrefix(p, AssetPrefix)
	if !ok || name == "" || name == "index.html" || strings.Contains(name, "/") {
		return false
	}
	_, err := fs.Stat(static, "static/"+name)
	return err == nil
}

func load() (map[string]asset, error) {
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		return nil, fmt.Errorf("read embedded page: %w", err)
	}
	out := map[string]asset{}
	for _, e := range entries {
		b, err := fs.ReadFile(static, "static/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = asset{name: e.Name(), contentType: contentType(e.Name()), body: b,
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	if _, ok := out["index.html"]; !ok {
		return nil, fmt.Errorf("embedded page has no index.html")
	}
	return out, nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// policy is the page's Content-Security-Policy: its own files only, no
// inline code, images from results (data: and blob: URLs), requests to its
// own origin (the API) and to where presigned uploads go.
func policy(connect []string) string {
	connectSrc := append([]string{"'self'"}, connect...)
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self' data: blob:",
		"connect-src " + strings.Join(connectSrc, " "),
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// withSlash redirects a request for the page whose client path lacks its
// trailing slash ("/prod") to the path with it, relative to the page, so it
// holds below any prefix.
func withSlash(clientPath func(*http.Request) string, next http.Handler) http.Handler {
	if clientPath == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := clientPath(r); p != "" && !strings.HasSuffix(p, "/") {
			w.Header().Set("Location", path.Base(p)+"/")
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveAsset answers with a's bytes. Every answer is revalidated (no-cache
// with an ETag), so an upgraded binary serves its new page at once and an
// unchanged one costs a 304.
func serveAsset(a asset, csp string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	})
}
