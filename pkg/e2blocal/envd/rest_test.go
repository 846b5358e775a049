//go:build linux

package envd

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// do sends one raw HTTP request and returns status, headers and body.
func do(t testing.TB, method, u string, body io.Reader, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// A raw transport: no transparent gzip, so Content-Encoding is visible.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func filesURL(base string, q map[string]string) string {
	v := url.Values{}
	for k, val := range q {
		v.Set(k, val)
	}
	return base + "/files?" + v.Encode()
}

// checkRESTError asserts E2B's REST error shape.
func checkRESTError(t testing.TB, status int, body []byte, want int) {
	t.Helper()
	if status != want {
		t.Fatalf("status %d (%s), want %d", status, body, want)
	}
	var e restError
	if err := json.Unmarshal(body, &e); err != nil || e.Code != want || e.Message == "" {
		t.Fatalf("error body %s: %v", body, err)
	}
}

func TestHealthEnvsMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, _, body := do(t, "GET", e.url+"/health", nil, nil)
	if status != http.StatusNoContent || len(body) != 0 {
		t.Errorf("health %d %q", status, body)
	}
	status, _, body = do(t, "GET", e.url+"/envs", nil, nil)
	var envs map[string]string
	if status != 200 || json.Unmarshal(body, &envs) != nil || envs["GLOBAL"] != "g" {
		t.Errorf("envs %d %s", status, body)
	}
	status, _, body = do(t, "GET", e.url+"/metrics", nil, nil)
	var m map[string]float64
	if status != 200 || json.Unmarshal(body, &m) != nil {
		t.Fatalf("metrics %d %s", status, body)
	}
	for _, k := range []string{"ts", "cpu_count", "cpu_used_pct", "mem_total", "mem_used", "mem_cache", "mem_total_mib", "mem_used_mib", "disk_used", "disk_total"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics lacks %s: %s", k, body)
		}
	}
	if m["cpu_count"] < 1 || m["mem_total"] <= 0 || m["disk_total"] <= 0 || m["mem_total_mib"] != float64(uint64(m["mem_total"])>>20) {
		t.Errorf("implausible metrics %s", body)
	}
	if abs := m["ts"] - float64(time.Now().Unix()); abs > 5 || abs < -5 {
		t.Errorf("ts %v", m["ts"])
	}
	status, _, body = do(t, "GET", e.url+"/nope", nil, nil)
	checkRESTError(t, status, body, http.StatusNotFound)
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, h, _ := do(t, "OPTIONS", e.url+"/process.Process/Start", nil, map[string]string{
		"Origin": "http://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "connect-protocol-version,content-type",
	})
	if status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "connect-protocol-version") {
		t.Errorf("preflight %d %v", status, h)
	}
	status, h, _ = do(t, "GET", e.url+"/health", nil, map[string]string{"Origin": "http://app.example"})
	if status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "Content-Disposition") {
		t.Errorf("simple request %d %v", status, h)
	}
}

func TestAccessToken(t *testing.T) {
	t.Parallel()
	const token = "secret-token"
	e := newEnv(t, func(c *Config) { c.AccessToken = token })
	mustWrite(t, filepath.Join(e.home, "f.txt"), "content")
	good := map[string]string{accessTokenHeader: token}
	bad := map[string]string{accessTokenHeader: "wrong"}
	cases := []struct {
		name   string
		method string
		url    string
		header map[string]string
		want   int
	}{
		{"health needs nothing", "GET", e.url + "/health", nil, 204},
		{"envs without token", "GET", e.url + "/envs", nil, 401},
		{"envs with wrong token", "GET", e.url + "/envs", bad, 401},
		{"envs with token", "GET", e.url + "/envs", good, 200},
		{"metrics without token", "GET", e.url + "/metrics", nil, 401},
		{"download without token or signature", "GET", filesURL(e.url, map[string]string{"path": "f.txt"}), nil, 401},
		{"download with wrong token", "GET", filesURL(e.url, map[string]string{"path": "f.txt"}), bad, 401},
		{"download with token", "GET", filesURL(e.url, map[string]string{"path": "f.txt"}), good, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, tc.method, tc.url, nil, tc.header)
			if tc.want >= 400 {
				checkRESTError(t, status, body, tc.want)
			} else if status != tc.want {
				t.Errorf("status %d (%s), want %d", status, body, tc.want)
			}
		})
	}
	for _, codec := range codecs {
		t.Run("rpc/"+codec.name, func(t *testing.T) {
			c := e.fs(codec.opts...)
			_, err := c.Stat(testCtx(t), connect.NewRequest(&filesystem.StatRequest{Path: "f.txt"}))
			wantCode(t, err, connect.CodeUnauthenticated)
			req := connect.NewRequest(&filesystem.StatRequest{Path: "f.txt"})
			req.Header().Set(accessTokenHeader, token)
			if _, err := c.Stat(testCtx(t), req); err != nil {
				t.Errorf("with token: %v", err)
			}
			_, err = runStart(t, testCtx(t), e.proc(codec.opts...), startReq("true"))
			wantCode(t, err, connect.CodeUnauthenticated)
		})
	}
}

func TestSignedURLs(t *testing.T) {
	t.Parallel()
	const token = "tok"
	e := newEnv(t, func(c *Config) { c.AccessToken = token })
	mustWrite(t, filepath.Join(e.home, "s.txt"), "signed")
	future := time.Now().Add(time.Hour).Unix()
	past := time.Now().Add(-time.Minute).Unix()
	sign := func(path, op, user string, exp *int64) map[string]string {
		q := map[string]string{"path": path, "signature": FileSignature(path, op, user, token, exp)}
		if user != "" {
			q["username"] = user
		}
		if exp != nil {
			q["signature_expiration"] = strconv.FormatInt(*exp, 10)
		}
		return q
	}
	cases := []struct {
		name string
		q    map[string]string
		want int
	}{
		{"no expiration", sign("s.txt", opRead, "", nil), 200},
		{"with user and expiration", sign("s.txt", opRead, "user", &future), 200},
		{"expired", sign("s.txt", opRead, "", &past), 401},
		{"write signature used to read", sign("s.txt", opWrite, "", nil), 401},
		{"signature for another path", func() map[string]string { q := sign("other.txt", opRead, "", nil); q["path"] = "s.txt"; return q }(), 401},
		{"tampered expiration", func() map[string]string {
			q := sign("s.txt", opRead, "", &past)
			q["signature_expiration"] = strconv.FormatInt(future, 10)
			return q
		}(), 401},
		{"garbage", map[string]string{"path": "s.txt", "signature": "v1_nope"}, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "GET", filesURL(e.url, tc.q), nil, nil)
			if tc.want != 200 {
				checkRESTError(t, status, body, tc.want)
				return
			}
			if status != 200 || string(body) != "signed" {
				t.Errorf("got %d %q", status, body)
			}
		})
	}
	// Upload through a signed write URL, raw body.
	q := sign("up/new.txt", opWrite, "", &future)
	status, _, body := do(t, "POST", filesURL(e.url, q), strings.NewReader("uploaded"), map[string]string{"Content-Type": "application/octet-stream"})
	if status != 200 {
		t.Fatalf("signed upload %d %s", status, body)
	}
	if got, _ := readFileString(filepath.Join(e.home, "up", "new.txt")); got != "uploaded" {
		t.Errorf("uploaded %q", got)
	}
	q = sign("up/new.txt", opRead, "", &future)
	status, _, body = do(t, "POST", filesURL(e.url, q), strings.NewReader("x"), map[string]string{"Content-Type": "application/octet-stream"})
	checkRESTError(t, status, body, 401)
}

// The signature must match what the SDK computes: v1_ + unpadded std
// base64 of SHA-256 over path:op:user:token[:exp].
func TestSignatureFormat(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("/a b:read::tok:42"))
	want := "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
	exp := int64(42)
	if got := FileSignature("/a b", "read", "", "tok", &exp); got != want {
		t.Errorf("signature %q, want %q", got, want)
	}
}

type uploaded []struct {
	Path     string            `json:"path"`
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata"`
}

// multipartBody builds a form whose file parts carry full paths as
// filenames, the way the JS SDK's FormData does.
func multipartBody(t testing.TB, files [][2]string) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, f[0]))
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f[1]))
	}
	if err := mw.WriteField("other", "ignored"); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

func TestUploadMultipart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	abs := filepath.Join(e.home, "abs", "deep", "c.bin")
	body, ctype := multipartBody(t, [][2]string{{"rel/dir/a.txt", "alpha"}, {"~/b.txt", "beta"}, {abs, "gamma"}})
	status, _, raw := do(t, "POST", e.url+"/files", body, map[string]string{"Content-Type": ctype})
	if status != 200 {
		t.Fatalf("upload %d %s", status, raw)
	}
	var got uploaded
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []struct{ path, content string }{
		{filepath.Join(e.home, "rel", "dir", "a.txt"), "alpha"},
		{filepath.Join(e.home, "b.txt"), "beta"},
		{abs, "gamma"},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %s", raw)
	}
	for i, w := range want {
		if got[i].Path != w.path || got[i].Name != filepath.Base(w.path) || got[i].Type != "file" {
			t.Errorf("entry %d = %+v, want %s", i, got[i], w.path)
		}
		if c, _ := readFileString(w.path); c != w.content {
			t.Errorf("%s holds %q", w.path, c)
		}
	}
	// With ?path= the part's filename is ignored; the file is overwritten.
	body, ctype = multipartBody(t, [][2]string{{"ignored-name", "replaced"}})
	status, _, raw = do(t, "POST", filesURL(e.url, map[string]string{"path": "b.txt"}), body, map[string]string{"Content-Type": ctype})
	if status != 200 || !strings.Contains(string(raw), filepath.Join(e.home, "b.txt")) {
		t.Fatalf("upload with path %d %s", status, raw)
	}
	if c, _ := readFileString(filepath.Join(e.home, "b.txt")); c != "replaced" {
		t.Errorf("b.txt holds %q", c)
	}
	if _, err := os.Stat(filepath.Join(e.home, "ignored-name")); !os.IsNotExist(err) {
		t.Errorf("filename used despite ?path=")
	}
}

func TestUploadErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustWrite(t, filepath.Join(e.home, "afile"), "x")
	if err := syscall.Mkfifo(filepath.Join(e.home, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.home, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	dup, dupType := multipartBody(t, [][2]string{{"same.txt", "1"}, {"./same.txt", "2"}})
	none, noneType := func() (io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("other", "x")
		_ = mw.Close()
		return &buf, mw.FormDataContentType()
	}()
	noName, noNameType := func() (io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormField("file")
		_, _ = w.Write([]byte("x"))
		_ = mw.Close()
		return &buf, mw.FormDataContentType()
	}()
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	cases := []struct {
		name   string
		q      map[string]string
		body   io.Reader
		header map[string]string
		want   int
	}{
		{"duplicate targets", nil, dup, map[string]string{"Content-Type": dupType}, 400},
		{"no file part", nil, none, map[string]string{"Content-Type": noneType}, 400},
		{"part without filename", nil, noName, map[string]string{"Content-Type": noNameType}, 400},
		{"multipart without boundary", nil, strings.NewReader("x"), map[string]string{"Content-Type": "multipart/form-data"}, 400},
		{"truncated multipart", nil, strings.NewReader("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.txt\"\r\n\r\nabc"), map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, 400},
		{"unsupported content type", map[string]string{"path": "x"}, strings.NewReader("x"), map[string]string{"Content-Type": "text/plain"}, 400},
		{"octet-stream without path", nil, strings.NewReader("x"), octet, 400},
		{"directory target", map[string]string{"path": "adir"}, strings.NewReader("x"), octet, 400},
		{"parent is a file", map[string]string{"path": "afile/child"}, strings.NewReader("x"), octet, 400},
		{"bad tilde", map[string]string{"path": "~root/x"}, strings.NewReader("x"), octet, 400},
		{"invalid gzip", map[string]string{"path": "g"}, strings.NewReader("not gzip"), map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}, 400},
		{"unknown encoding", map[string]string{"path": "g"}, strings.NewReader("x"), map[string]string{"Content-Type": "application/octet-stream", "Content-Encoding": "br"}, 415},
		{"other user", map[string]string{"path": "x", "username": "root"}, strings.NewReader("x"), octet, 401},
		{"bad metadata value", map[string]string{"path": "m"}, strings.NewReader("x"), map[string]string{"Content-Type": "application/octet-stream", "X-Metadata-K": "caf\u00e9"}, 400},
		{"metadata too large", map[string]string{"path": "m"}, strings.NewReader("x"), map[string]string{"Content-Type": "application/octet-stream", "X-Metadata-K": strings.Repeat("v", 5000)}, 400},
		// /dev/full fails every write with ENOSPC: a real disk-full error.
		{"fifo target", map[string]string{"path": "fifo"}, strings.NewReader("x"), octet, 400},
		{"disk full", map[string]string{"path": "/dev/full"}, strings.NewReader("data"), octet, 507},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "POST", filesURL(e.url, tc.q), tc.body, tc.header)
			checkRESTError(t, status, body, tc.want)
		})
	}
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestOctetStreamGzipAndMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := bytes.Repeat([]byte("compressible "), 1000)
	status, _, raw := do(t, "POST", filesURL(e.url, map[string]string{"path": "z/data.txt"}), bytes.NewReader(gz(t, data)), map[string]string{
		"Content-Type":     "application/octet-stream",
		"Content-Encoding": "gzip",
		"X-Metadata-Owner": "alice",
		"X-Metadata-Kind":  "report",
	})
	if status != 200 {
		t.Fatalf("upload %d %s", status, raw)
	}
	var got uploaded
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 {
		t.Fatalf("response %s", raw)
	}
	if got[0].Metadata["owner"] != "alice" || got[0].Metadata["kind"] != "report" {
		t.Errorf("echoed metadata %v", got[0].Metadata)
	}
	if b, _ := os.ReadFile(filepath.Join(e.home, "z", "data.txt")); !bytes.Equal(b, data) {
		t.Errorf("stored %d bytes, want %d", len(b), len(data))
	}
	st, err := e.fs().Stat(testCtx(t), connect.NewRequest(&filesystem.StatRequest{Path: "z/data.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if md := st.Msg.GetEntry().GetMetadata(); md["owner"] != "alice" || md["kind"] != "report" || len(md) != 2 {
		t.Errorf("Stat metadata %v", md)
	}
	// A new write with other metadata replaces the set.
	status, _, raw = do(t, "POST", filesURL(e.url, map[string]string{"path": "z/data.txt"}), strings.NewReader("v2"), map[string]string{
		"Content-Type": "application/octet-stream", "X-Metadata-Owner": "bob",
	})
	if status != 200 {
		t.Fatalf("rewrite %d %s", status, raw)
	}
	st, err = e.fs().Stat(testCtx(t), connect.NewRequest(&filesystem.StatRequest{Path: "z/data.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if md := st.Msg.GetEntry().GetMetadata(); md["owner"] != "bob" || len(md) != 1 {
		t.Errorf("Stat metadata after rewrite %v", md)
	}
	// A write without metadata clears it, as in E2B.
	status, _, raw = do(t, "POST", filesURL(e.url, map[string]string{"path": "z/data.txt"}), strings.NewReader("v3"), map[string]string{
		"Content-Type": "application/octet-stream",
	})
	if status != 200 {
		t.Fatalf("plain rewrite %d %s", status, raw)
	}
	st, err = e.fs().Stat(testCtx(t), connect.NewRequest(&filesystem.StatRequest{Path: "z/data.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if md := st.Msg.GetEntry().GetMetadata(); len(md) != 0 {
		t.Errorf("Stat metadata after a write without metadata %v", md)
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	content := bytes.Repeat([]byte("0123456789"), 1000)
	mustWrite(t, filepath.Join(e.home, "d", "file.txt"), string(content))
	mustWrite(t, filepath.Join(e.home, "empty"), "")
	if err := syscall.Mkfifo(filepath.Join(e.home, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("plain", func(t *testing.T) {
		status, h, body := do(t, "GET", filesURL(e.url, map[string]string{"path": "d/file.txt"}), nil, nil)
		if status != 200 || !bytes.Equal(body, content) {
			t.Fatalf("status %d, %d bytes", status, len(body))
		}
		if h.Get("Content-Disposition") != "inline; filename=file.txt" || h.Get("Content-Length") != strconv.Itoa(len(content)) || h.Get("Content-Encoding") != "" {
			t.Errorf("headers %v", h)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		status, h, body := do(t, "GET", filesURL(e.url, map[string]string{"path": "~/d/file.txt"}), nil, map[string]string{"Accept-Encoding": "gzip"})
		if status != 200 || h.Get("Content-Encoding") != "gzip" || !strings.Contains(h.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("status %d headers %v", status, h)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(plain, content) || len(body) >= len(content) {
			t.Errorf("gunzipped %d bytes (err %v) from %d", len(plain), err, len(body))
		}
	})
	t.Run("range", func(t *testing.T) {
		status, h, body := do(t, "GET", filesURL(e.url, map[string]string{"path": "d/file.txt"}), nil, map[string]string{"Range": "bytes=10-19", "Accept-Encoding": "gzip"})
		if status != http.StatusPartialContent || string(body) != "0123456789" || h.Get("Content-Encoding") != "" {
			t.Errorf("range: %d %q %v", status, body, h)
		}
	})
	t.Run("empty", func(t *testing.T) {
		status, h, body := do(t, "GET", filesURL(e.url, map[string]string{"path": "empty"}), nil, nil)
		if status != 200 || len(body) != 0 || h.Get("Content-Length") != "0" {
			t.Errorf("empty: %d %q %v", status, body, h)
		}
	})
	cases := []struct {
		name   string
		q      map[string]string
		header map[string]string
		want   int
	}{
		{"missing", map[string]string{"path": "nope"}, nil, 404},
		{"directory", map[string]string{"path": "d"}, nil, 400},
		{"no path is home, a directory", nil, nil, 400},
		{"bad tilde", map[string]string{"path": "~x"}, nil, 400},
		{"other user", map[string]string{"path": "d/file.txt", "username": "root"}, nil, 401},
		{"endless device", map[string]string{"path": "/dev/zero"}, map[string]string{"Accept-Encoding": "gzip"}, 400},
		{"fifo", map[string]string{"path": "fifo"}, nil, 400},
		{"unacceptable encoding", map[string]string{"path": "d/file.txt"}, map[string]string{"Accept-Encoding": "br, identity;q=0"}, 406},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "GET", filesURL(e.url, tc.q), nil, tc.header)
			checkRESTError(t, status, body, tc.want)
		})
	}
}

func TestLargeFileRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := make([]byte, 16<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	status, _, raw := do(t, "POST", filesURL(e.url, map[string]string{"path": "big.bin"}), bytes.NewReader(data), map[string]string{"Content-Type": "application/octet-stream"})
	if status != 200 {
		t.Fatalf("upload %d %s", status, raw)
	}
	body, ctype := multipartBody(t, [][2]string{{"big2.bin", string(data)}})
	status, _, raw = do(t, "POST", e.url+"/files", body, map[string]string{"Content-Type": ctype})
	if status != 200 {
		t.Fatalf("multipart upload %d %s", status, raw)
	}
	for _, name := range []string{"big.bin", "big2.bin"} {
		status, _, got := do(t, "GET", filesURL(e.url, map[string]string{"path": name}), nil, nil)
		if status != 200 || sha256.Sum256(got) != sha256.Sum256(data) {
			t.Errorf("%s: status %d, %d bytes, content differs", name, status, len(got))
		}
	}
}

func TestRPCBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name   string
		path   string
		ctype  string
		body   []byte
		header map[string]string
		status int
		code   string
	}{
		{"malformed json", "/filesystem.Filesystem/Stat", "application/json", []byte("{not json"), nil, 400, "invalid_argument"},
		{"wrong field type", "/process.Process/List", "application/json", []byte(`{"x":`), nil, 400, "invalid_argument"},
		{"malformed binary", "/filesystem.Filesystem/Stat", "application/proto", []byte{0xff, 0xff, 0xff}, nil, 400, "invalid_argument"},
		{"unknown procedure", "/process.Process/Nope", "application/json", []byte(`{}`), nil, 404, ""},
		{"bad user", "/process.Process/List", "application/json", []byte(`{}`), map[string]string{"Authorization": "Basic cm9vdDo="}, 400, "invalid_argument"},
		{"malformed authorization", "/process.Process/List", "application/json", []byte(`{}`), map[string]string{"Authorization": "Basic !!!"}, 400, "invalid_argument"},
		{"default user explicitly", "/process.Process/List", "application/json", []byte(`{}`), map[string]string{"Authorization": "Basic dXNlcjo="}, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": tc.ctype, "Connect-Protocol-Version": "1"}
			for k, v := range tc.header {
				h[k] = v
			}
			status, _, body := do(t, "POST", e.url+tc.path, bytes.NewReader(tc.body), h)
			if status != tc.status {
				t.Fatalf("status %d (%s), want %d", status, body, tc.status)
			}
			if tc.code != "" && !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
				t.Errorf("body %s lacks code %s", body, tc.code)
			}
		})
	}
	// A broken stream envelope and an oversized one.
	for name, body := range map[string][]byte{
		"short envelope": {0, 0, 0},
		"garbage frame":  append([]byte{0, 0, 0, 0, 5}, []byte("{{{{{")...),
		"huge length":    {0, 0x7f, 0xff, 0xff, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			status, _, resp := do(t, "POST", e.url+"/process.Process/Start", bytes.NewReader(body), map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
			if status != 200 || !bytes.Contains(resp, []byte(`"code":"`)) {
				t.Errorf("status %d body %q", status, resp)
			}
		})
	}
	// The server still works.
	if r := mustRun(t, testCtx(t), e.proc(), startReq("true")); r.end.GetExitCode() != 0 {
		t.Errorf("after bad input: %v", r.end)
	}
}

func TestRPCUserSelection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, codec := range codecs {
		t.Run(codec.name, func(t *testing.T) {
			req := startReq("true")
			req.Header().Set("Authorization", "Basic dXNlcjo=") // user:
			mustRun(t, testCtx(t), e.proc(codec.opts...), req)
			req = startReq("true")
			req.Header().Set("Authorization", "Basic cm9vdDo=") // root:
			_, err := runStart(t, testCtx(t), e.proc(codec.opts...), req)
			wantCode(t, err, connect.CodeInvalidArgument)
		})
	}
}
