package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/urlfetch"
	"github.com/sessionbox/sessionbox/pkg/urlfetch/urlfetchtest"
)

// cdnName looks like a public host; the tests' resolver points it (and
// the others below) where each test needs.
const cdnName = "cdn.example.com"

// urlUploadLimits keep the limit tests small and quick.
var urlUploadLimits = session.URLUploadConfig{MaxFileBytes: 64 << 10, FileTimeout: 5 * time.Second, Parallelism: 4}

// uploadStack is a stack whose fetcher resolves names by the test's table.
func uploadStack(t *testing.T, allowPrivate bool) *stack {
	t.Helper()
	f := urlfetch.New(urlfetch.Options{
		AllowPrivate: allowPrivate,
		Resolver: urlfetchtest.Resolver(map[string][]netip.Addr{
			cdnName:             {netip.MustParseAddr("127.0.0.1")},
			"v6.example.com":    {netip.MustParseAddr("::1")},
			"intranet.example":  {netip.MustParseAddr("10.1.2.3")},
			"metadata.example":  {netip.MustParseAddr("169.254.169.254")},
			"cgnat.example.com": {netip.MustParseAddr("100.64.0.7")},
		}),
	})
	t.Cleanup(f.Close)
	cfg := session.Config{URLUploads: urlUploadLimits}
	cfg.URLUploads.AllowPrivate = allowPrivate
	return buildStack(t, 0, cfg, awsParts{fetcher: f})
}

// origin is a loopback file server: /cd/{name} names its file by
// Content-Disposition, /raw/{name} does not, /big sends more than the
// per-file limit (with its length announced, /big-chunked without), /slow
// drips past the per-file time limit, /to?u= redirects to u, /gone is 404.
func origin(t *testing.T) (port string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/cd/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		w.Header().Set("Content-Disposition", "attachment; filename=\"fallback.bin\"; filename*=UTF-8''"+url.PathEscape(name))
		_, _ = fmt.Fprintf(w, "content of %s\n", name)
	})
	mux.HandleFunc("/raw/{name}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "raw %s\n", r.PathValue("name"))
	})
	big := bytes.Repeat([]byte("x"), int(urlUploadLimits.MaxFileBytes)+1)
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="big.bin"`)
		_, _ = w.Write(big)
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="chunked.bin"`)
		for i := 0; i < len(big); i += 4096 {
			_, _ = w.Write(big[i:min(i+4096, len(big))])
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="slow.txt"`)
		for {
			if _, err := io.WriteString(w, "."); err != nil {
				return
			}
			_ = http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("/gone", http.NotFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

type uploadResult struct {
	Status   string `json:"status"`
	Uploaded []struct {
		SourceURL string `json:"sourceUrl"`
		Path      string `json:"path"`
		SizeBytes int64  `json:"sizeBytes"`
	} `json:"uploaded"`
	Errors []struct {
		SourceURL string `json:"sourceUrl"`
		Error     string `json:"error"`
	} `json:"errors"`
}

func (s *stack) uploadURLs(sid string, body map[string]any) uploadResult {
	s.t.Helper()
	var out uploadResult
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/files/upload-urls", body, &out)
	return out
}

// errorsBySource maps each failed URL to its error.
func (r uploadResult) errorsBySource() map[string]string {
	m := map[string]string{}
	for _, e := range r.Errors {
		m[e.SourceURL] = e.Error
	}
	return m
}

// TestEndToEndUploadURLsRefusesForbiddenAddresses: with the default
// setting every forbidden class is refused, a public name resolving to
// loopback included, and nothing lands.
func TestEndToEndUploadURLsRefusesForbiddenAddresses(t *testing.T) {
	t.Parallel()
	s := uploadStack(t, false)
	port := origin(t)
	cases := []struct{ url, want string }{
		{"http://" + cdnName + ":" + port + "/cd/a.txt", "refused: " + cdnName + ":" + port + " connects to 127.0.0.1, a loopback address"},
		{"http://127.0.0.1:" + port + "/cd/a.txt", "loopback"},
		{"http://v6.example.com:" + port + "/cd/a.txt", "::1, a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/cd/a.txt", "127.0.0.1, a loopback address"},
		{"http://intranet.example/", "10.1.2.3, a private address"},
		{"http://192.168.0.1/", "private"},
		{"http://metadata.example/latest/meta-data/", "169.254.169.254, a cloud metadata address"},
		{"http://169.254.169.254/latest/meta-data/iam/", "cloud metadata"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata"},
		{"http://169.254.3.4/", "link-local"},
		{"http://cgnat.example.com/", "carrier-grade NAT"},
		{"http://[fd12:3456::1]/", "IPv6 unique-local"},
		{"http://[fe80::1]/", "link-local"},
		{"http://224.0.0.251/", "multicast"},
		{"http://0.0.0.0:" + port + "/", "unspecified"},
		{"http://255.255.255.255/", "broadcast"},
		{"http://240.0.0.1/", "reserved"},
		{"http://[64:ff9b::7f00:1]:" + port + "/", "64:ff9b::7f00:1 (IPv4 127.0.0.1), a loopback address"}, // NAT64
		{"http://[2002:a00:1::1]/", "2002:a00:1::1 (IPv4 10.0.0.1), a private address"},                    // 6to4
	}
	var urls []string
	for _, c := range cases {
		urls = append(urls, c.url)
	}
	res := s.uploadURLs("ssrf", map[string]any{"urls": urls, "destDir": "in"})
	if res.Status != "failure" || len(res.Uploaded) != 0 || len(res.Errors) != len(cases) {
		t.Fatalf("result %+v, want failure with %d errors", res, len(cases))
	}
	got := res.errorsBySource()
	for _, c := range cases {
		if !strings.Contains(got[c.url], c.want) {
			t.Errorf("%s: error %q, want it to name %q", c.url, got[c.url], c.want)
		}
	}
	// Nothing landed: the directory was never made.
	resp, body := s.req(s.alice, "GET", "/v1/sessions/ssrf/files?path=in", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("listing the destination: %d %s, want 404", resp.StatusCode, body)
	}
}

// TestEndToEndUploadURLsMixed: with private URLs allowed (as in a private
// deployment), files land under their Content-Disposition names (or the
// URL's), deduplicated; an oversized body, a slow server, a redirect from
// the allowed host to cloud metadata and a 404 fail alone, leaving no
// partial file: partial_success.
func TestEndToEndUploadURLsMixed(t *testing.T) {
	t.Parallel()
	s := uploadStack(t, true)
	port := origin(t)
	base := "http://" + cdnName + ":" + port
	good := []struct{ url, path, content string }{
		{base + "/cd/" + url.PathEscape("€ rates.csv"), "/home/user/data/€ rates.csv", "content of € rates.csv\n"},
		{base + "/cd/report.txt", "/home/user/data/report.txt", "content of report.txt\n"},
		{base + "/cd/report.txt?again=1", "/home/user/data/report (1).txt", "content of report.txt\n"},
		{base + "/raw/plain.json?sig=abc", "/home/user/data/plain.json", "raw plain.json\n"},
		{base + "/cd/..%2F..%2F.bashrc", "/home/user/data/bashrc", "content of ../../.bashrc\n"},
		{base + "/to?u=/cd/moved.txt", "/home/user/data/moved.txt", "content of moved.txt\n"},
	}
	limit := fmt.Sprint(urlUploadLimits.MaxFileBytes)
	bad := []struct{ url, want string }{
		{base + "/big", "more than the per-file limit of " + limit + " bytes"},
		{base + "/big-chunked", "more than the per-file limit of " + limit + " bytes"},
		{base + "/slow", "not finished within the per-file time limit of " + urlUploadLimits.FileTimeout.String()},
		{base + "/to?u=http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 connects to 169.254.169.254, a cloud metadata address"},
		{base + "/to?u=http://metadata.example/latest/", "refused: metadata.example connects to 169.254.169.254"},
		{base + "/gone", "answered 404 Not Found"},
		{"http://nowhere.example.com/x", "nowhere.example.com could not be resolved"},
	}
	var urls []string
	for i := range max(len(good), len(bad)) {
		if i < len(good) {
			urls = append(urls, good[i].url)
		}
		if i < len(bad) {
			urls = append(urls, bad[i].url)
		}
	}
	res := s.uploadURLs("mixed", map[string]any{"urls": urls, "destDir": "data"})
	if res.Status != "partial_success" || len(res.Uploaded) != len(good) || len(res.Errors) != len(bad) {
		t.Fatalf("result %+v, want partial_success with %d uploaded and %d errors", res, len(good), len(bad))
	}
	landed := map[string]string{}
	for _, u := range res.Uploaded {
		landed[u.SourceURL] = u.Path
	}
	// Two URLs named report.txt: which gets "(1)" depends on which
	// finishes its headers first.
	if r0, r1 := good[1].url, good[2].url; landed[r0] == good[2].path && landed[r1] == good[1].path {
		landed[r0], landed[r1] = landed[r1], landed[r0]
	}
	for _, g := range good {
		if landed[g.url] != g.path {
			t.Errorf("%s landed at %q, want %q", g.url, landed[g.url], g.path)
			continue
		}
		resp, body := s.req(s.alice, "GET", "/v1/sessions/mixed/files/content?path="+url.QueryEscape(g.path), nil)
		if resp.StatusCode != http.StatusOK || string(body) != g.content {
			t.Errorf("%s: %d %q, want %q", g.path, resp.StatusCode, body, g.content)
		}
	}
	errs := res.errorsBySource()
	for _, b := range bad {
		if !strings.Contains(errs[b.url], b.want) {
			t.Errorf("%s: error %q, want it to name %q", b.url, errs[b.url], b.want)
		}
	}
	// The failed files left nothing behind.
	var listing struct {
		Entries []struct {
			Name string `json:"name"`
		} `json:"entries"`
	}
	s.json(s.alice, "GET", "/v1/sessions/mixed/files?path=data", nil, &listing)
	if len(listing.Entries) != len(good) {
		t.Fatalf("data holds %+v, want only the %d good files", listing.Entries, len(good))
	}
}

// TestEndToEndUploadURLsRequestLimits: the per-request byte and time limits
// fail the URLs past them, each naming the limit, while the files before
// them stay. One fetch at a time makes the order of the URLs the order the
// limits are met in.
func TestEndToEndUploadURLsRequestLimits(t *testing.T) {
	t.Parallel()
	f := urlfetch.New(urlfetch.Options{AllowPrivate: true, Resolver: urlfetchtest.Resolver(map[string][]netip.Addr{
		cdnName: {netip.MustParseAddr("127.0.0.1")},
	})})
	t.Cleanup(f.Close)
	lim := session.URLUploadConfig{AllowPrivate: true, Parallelism: 1, MaxTotalBytes: 40,
		FileTimeout: time.Minute, RequestTimeout: 3 * time.Second}
	s := buildStack(t, 0, session.Config{URLUploads: lim}, awsParts{fetcher: f})
	// The sandbox starts first, so the request's 3 s go to fetching.
	s.json(s.alice, "POST", "/v1/sessions/limits/sandbox/start", map[string]any{}, nil)
	base := "http://" + cdnName + ":" + origin(t)
	urls := []string{
		base + "/cd/one.txt",      // 19 bytes
		base + "/cd/two.txt",      // 19 bytes: 38 in all
		base + "/cd/three.txt",    // 21 more announced: past 40
		base + "/raw/chunked.txt", // 16 bytes unannounced: past 40 while read
	}
	res := s.uploadURLs("limits", map[string]any{"urls": urls})
	if res.Status != "partial_success" || len(res.Uploaded) != 2 || len(res.Errors) != 2 {
		t.Fatalf("result %+v", res)
	}
	errs := res.errorsBySource()
	for _, u := range urls[2:] {
		if want := "the files together are more than the per-request limit of 40 bytes"; errs[u] != want {
			t.Errorf("%s: error %q, want %q", u, errs[u], want)
		}
	}
	// A new request has its own budget, and its own time.
	slow := []string{base + "/slow", base + "/cd/after-slow.txt"}
	res = s.uploadURLs("limits", map[string]any{"urls": slow})
	errs = res.errorsBySource()
	if res.Status != "failure" || len(errs) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, u := range slow {
		if want := "not finished within the request's time limit of 3s"; errs[u] != want {
			t.Errorf("%s: error %q, want %q", u, errs[u], want)
		}
	}
	for _, p := range []string{"chunked.txt", "slow.txt", "after-slow.txt"} {
		resp, body := s.req(s.alice, "GET", "/v1/sessions/limits/files/content?path="+p, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s, which failed: %d %s, want no such file", p, resp.StatusCode, body)
		}
	}
}

// TestEndToEndUploadURLsClientGone: a client that hangs up mid-download
// stops the fetch, and the partial file is removed. The file is written
// aside under a hidden name until it is whole, so the target never shows
// part of it.
func TestEndToEndUploadURLsClientGone(t *testing.T) {
	t.Parallel()
	s := buildStack(t, 0, session.Config{URLUploads: session.URLUploadConfig{AllowPrivate: true, FileTimeout: time.Minute}}, awsParts{})
	src := "http://127.0.0.1:" + origin(t) + "/slow"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"urls": []string{src}})
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/sessions/gone/files/upload-urls", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.alice)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := s.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// status asks for the file on a connection of its own: 200 while it
	// exists, 404 once it is gone, 0 when the answer was lost.
	status := func() int {
		r, _ := http.NewRequest("GET", s.url+"/v1/sessions/gone/files/content?path=slow.txt", nil)
		r.Header.Set("Authorization", "Bearer "+s.alice)
		r.Close = true
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// aside counts the hidden files uploads are written to in the home.
	aside := func() string {
		return s.exec(s.alice, "gone", "import os\nsum(n.startswith('.sbx-upload-') for n in os.listdir('/home/user'))").text()
	}
	waitFor(t, 30*time.Second, "the slow file to be written aside", func() bool { return aside() == "1" })
	if got := status(); got != http.StatusNotFound {
		t.Fatalf("the slow file shows at its path before it is whole: %d", got)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the request finished before the client hung up")
	}
	waitFor(t, 30*time.Second, "the partial file to be removed", func() bool { return aside() == "0" })
	if got := status(); got != http.StatusNotFound {
		t.Fatalf("the slow file after the hang-up: %d", got)
	}
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, d, func() error {
		if !cond() {
			return errors.New("waiting for " + what)
		}
		return nil
	})
}
