package playground

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// apiStub stands in for the API: it answers every request it gets with 418,
// so a test sees which requests the page let through.
var apiStub = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })

func TestWithRoutes(t *testing.T) {
	t.Parallel()
	h := With(apiStub, Options{})
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/", 200, "text/html; charset=utf-8"},
		{"GET", "/playground/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/playground/app.css", 200, "text/css; charset=utf-8"},
		{"GET", "/playground/icon.svg", 200, "image/svg+xml"},
		// Everything else is the API's: its routes, its 404s and 405s.
		{"POST", "/", http.StatusTeapot, ""},
		{"GET", "/playground/", http.StatusTeapot, ""},
		{"GET", "/playground/index.html", http.StatusTeapot, ""},
		{"GET", "/playground/missing.js", http.StatusTeapot, ""},
		{"GET", "/playground/../v1/sessions", http.StatusTeapot, ""},
		{"GET", "/playground/a/app.js", http.StatusTeapot, ""},
		{"PUT", "/playground/app.js", http.StatusTeapot, ""},
		{"GET", "/v1/sessions", http.StatusTeapot, ""},
		{"GET", "/index.html", http.StatusTeapot, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if tc.status == 200 && tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD sent %d body bytes", rec.Body.Len())
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := Handler(Options{ConnectSources: []string{"http://127.0.0.1:9000", "https://*.amazonaws.com"}})
	for _, path := range []string{"/", "/playground/app.js"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		hd := rec.Header()
		csp := hd.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'",
			"connect-src 'self' http://127.0.0.1:9000 https://*.amazonaws.com", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q allows unsafe sources", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
			"X-Frame-Options": "DENY", "Cache-Control": "no-cache"} {
			if hd.Get(k) != want {
				t.Errorf("%s: %s = %q, want %q", path, k, hd.Get(k), want)
			}
		}
	}
}

// TestRevalidation: the ETag lets a browser keep the page until the binary
// serving it changes.
func TestRevalidation(t *testing.T) {
	t.Parallel()
	h := Handler(Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/playground/app.js", nil))
	etag := rec.Header().Get("ETag")
	if rec.Code != 200 || etag == "" {
		t.Fatalf("status %d, ETag %q", rec.Code, etag)
	}
	req := httptest.NewRequest("GET", "/playground/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation: status %d, want 304", rec.Code)
	}
}

// TestPageHasNoInlineCode holds the page to its CSP: no inline scripts,
// styles or handlers, and every file it names is relative (so it works
// below an API Gateway stage) and served.
func TestPageHasNoInlineCode(t *testing.T) {
	t.Parallel()
	h := Handler(Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	page, _ := io.ReadAll(rec.Body)
	html := string(page)
	for _, bad := range []string{"<style", " style=", " onclick=", " onload=", "javascript:", `src="/`, `href="/`} {
		if strings.Contains(html, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if strings.Count(html, "<script") != 1 || !strings.Contains(html, `<script src="playground/app.js" defer></script>`) {
		t.Error("the page should load app.js, and only it, as a file")
	}
	for _, ref := range []string{"playground/app.js", "playground/app.css", "playground/icon.svg"} {
		if !strings.Contains(html, `"`+ref+`"`) {
			t.Errorf("the page does not name %s", ref)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+ref, nil))
		if rec.Code != 200 {
			t.Errorf("%s: status %d", ref, rec.Code)
		}
	}
}

// TestUploadOrigin: a page served locally names its uploads' loopback host
// but not the S3 stand-in's port, which it has no need to advertise.
func TestUploadOrigin(t *testing.T) {
	t.Parallel()
	for endpoint, want := range map[string]string{
		"":                           AWSUploads,
		"http://127.0.0.1:4566":      "http://127.0.0.1:*",
		"http://127.0.0.1:4566/path": "http://127.0.0.1:*",
		"http://localhost:4566":      "http://localhost:*",
		"http://[::1]:4566":          "http://[::1]:*",
		"https://s3.example.test":    "https://s3.example.test",
		"not a url":                  AWSUploads,
	} {
		if got := UploadOrigin(endpoint); got != want {
			t.Errorf("UploadOrigin(%q) = %q, want %q", endpoint, got, want)
		}
	}
}

// TestTrailingSlash: below a stage the page is at "/prod/"; asked for as
// "/prod" it redirects there, so its relative links stay below the stage.
func TestTrailingSlash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		client   string
		status   int
		location string
	}{
		{"/prod", http.StatusMovedPermanently, "prod/"},
		{"/base/v2", http.StatusMovedPermanently, "v2/"},
		{"/prod/", http.StatusOK, ""},
		{"/", http.StatusOK, ""},
		{"", http.StatusOK, ""},
	} {
		h := Handler(Options{ClientPath: func(*http.Request) string { return tc.client }})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != tc.status || rec.Header().Get("Location") != tc.location {
			t.Errorf("client path %q: %d %q, want %d %q", tc.client, rec.Code, rec.Header().Get("Location"), tc.status, tc.location)
		}
	}
}
