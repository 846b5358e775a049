package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/local"
)

// hostileIDs are path parameters no operation may take: traversal,
// separators, NUL, overlong, spaces and non-ASCII.
var hostileIDs = []string{"..", "../../etc", "a/b", "a\x00b", strings.Repeat("x", 300), "a b", "ünï", "%2e%2e", "-"}

// hostileBodies are request bodies no operation may take as valid.
var hostileBodies = []string{
	"{", "null", "[]", `"str"`, "42", `{"code":123}`, `{"path":["x"]}`,
	`{"code":"1","timeoutSecs":-1}`, `{"code":"1","timeoutSecs":1e300}`,
	`{"path":"../../../etc/passwd","sizeBytes":-5}`, `{"cmd":"","envs":{"A B":"x"}}`,
	strings.Repeat("[", 100000), `{"a":` + strings.Repeat(`"`+strings.Repeat("z", 1<<10)+`",`, 1) + `}`,
	string([]byte{0xff, 0xfe, 0x00, 0x7b}),
}

// hostileQueries are query strings for the routes that read one.
var hostileQueries = []string{
	"path=../../../etc/passwd", "path=%00", "path=/proc/self/environ", "depth=-1", "depth=999999",
	"path=" + strings.Repeat("a", 5000), "limit=-3", "cursor=" + url.QueryEscape(`{"pk":"x"}`), "cursor=%ff%fe",
}

// hostileHeaders are header sets sent with an otherwise plain request.
var hostileHeaders = []map[string]string{
	{"Content-Type": "text/plain"},
	{"Content-Type": "application/json; charset=utf-16"},
	{"Accept": "application/x-nothing"},
	{"X-Request-Id": "bad id with spaces"},
	{"X-Request-Id": strings.Repeat("r", 500)},
	{"Content-Encoding": "gzip"},
}

// leakMarkers are texts an error answer must never carry: host paths,
// Go internals, the stand-ins' addresses.
var leakMarkers = []string{"/tmp/", "/var/lib", "/root/", ".go:", "goroutine", "panic", "runtime error", "127.0.0.1", "dial tcp", "sessionbox-local"}

// TestHostileInputsEveryOperation sends hostile path parameters, bodies,
// queries, headers and credentials to every operation of the OpenAPI
// document, as the red team's fuzzing did: nothing answers 5xx, every
// refusal is problem+json, and no answer names a host path or an internal
// error. It logs the figures per surface.
func TestHostileInputsEveryOperation(t *testing.T) {
	t.Parallel()
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: t.TempDir(), Keys: []local.Key{alice},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ops := documentOperations(t)
	h := &hostile{t: t, base: svc.URL, key: alice.Secret, figures: map[string]*surfaceFigures{}}
	for _, op := range ops {
		for _, id := range hostileIDs {
			if strings.Contains(op.path, "{") {
				h.send("path parameters", op, fillPath(op.path, id), "", nil, h.key)
			}
		}
		plain := fillPath(op.path, "hostile-s")
		if op.method != http.MethodGet && op.method != http.MethodDelete {
			for _, b := range hostileBodies {
				h.send("bodies", op, plain, b, map[string]string{"Content-Type": "application/json"}, h.key)
			}
		}
		for _, q := range hostileQueries {
			h.send("queries", op, plain+"?"+q, "", nil, h.key)
		}
		for _, hd := range hostileHeaders {
			h.send("headers", op, plain, "{}", hd, h.key)
		}
		for _, k := range []string{"", "sbx_" + strings.Repeat("0", 40), alice.Secret + "x", "Basic Zm9vOmJhcg=="} {
			h.send("credentials", op, plain, "{}", nil, k)
		}
	}
	names := make([]string, 0, len(h.figures))
	for n := range h.figures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := h.figures[n]
		t.Logf("%-16s %5d inputs: %d 2xx, %d 4xx, %d 5xx", n, f.inputs, f.ok, f.client, f.server)
	}
}

type operation struct{ method, path string }

// documentOperations lists the document's operations.
func documentOperations(t *testing.T) []operation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for p, methods := range doc.Paths {
		for m := range methods {
			switch m {
			case "get", "post", "put", "delete", "patch":
				ops = append(ops, operation{strings.ToUpper(m), p})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	if len(ops) < 30 {
		t.Fatalf("the document lists %d operations", len(ops))
	}
	return ops
}

// fillPath puts id, escaped, in every path parameter of p.
func fillPath(p, id string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		j := strings.IndexByte(p[i:], '}')
		b.WriteString(p[:i] + url.PathEscape(id))
		p = p[i+j+1:]
	}
}

type surfaceFigures struct{ inputs, ok, client, server int }

type hostile struct {
	t       *testing.T
	base    string
	key     string
	figures map[string]*surfaceFigures
}

// send makes one hostile request and checks its answer.
func (h *hostile) send(surface string, op operation, path, body string, headers map[string]string, key string) {
	h.t.Helper()
	req, err := http.NewRequest(op.method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatalf("%s %s: %v", op.method, path, err)
	}
	switch {
	case strings.HasPrefix(key, "Basic "):
		req.Header.Set("Authorization", key)
	case key != "":
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Errorf("%s %s (%s): %v", op.method, path, surface, err)
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	f := h.figures[surface]
	if f == nil {
		f = &surfaceFigures{}
		h.figures[surface] = f
	}
	f.inputs++
	what := fmt.Sprintf("%s %s (%s, body %.40q)", op.method, shorten(path), surface, body)
	switch {
	case resp.StatusCode >= 500:
		f.server++
		h.t.Errorf("%s: %d %s", what, resp.StatusCode, shorten(string(raw)))
	case resp.StatusCode >= 400:
		f.client++
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			h.t.Errorf("%s: %d with Content-Type %q: %s", what, resp.StatusCode, ct, shorten(string(raw)))
		}
	default:
		f.ok++
	}
	for _, m := range leakMarkers {
		if resp.StatusCode >= 400 && bytes.Contains(raw, []byte(m)) {
			h.t.Errorf("%s: the answer names %q: %s", what, m, shorten(string(raw)))
		}
	}
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
