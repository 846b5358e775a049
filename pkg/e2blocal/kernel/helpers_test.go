//go:build linux

package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

const testPython = "/usr/bin/python3"

// testTuning keeps waits short so interrupt and keepalive paths run quickly.
var testTuning = tuning{keepalive: 100 * time.Millisecond, grace: 2 * time.Second, startTimeout: 30 * time.Second}

type testEnv struct {
	srv *Server
	ts  *httptest.Server
	url string
	dir string
}

func newTestEnv(t *testing.T, cfg Config, tune tuning) *testEnv {
	t.Helper()
	e2btest.NeedsSandboxes(t)
	dir := t.TempDir()
	if cfg.Python == "" {
		cfg.Python = testPython
	}
	if cfg.Workdir == "" {
		cfg.Workdir = dir
	}
	s, err := newServer(cfg, tune)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close()
	})
	return &testEnv{srv: s, ts: ts, url: ts.URL, dir: dir}
}

func defaultEnv(t *testing.T) *testEnv { return newTestEnv(t, Config{}, testTuning) }

type line = map[string]any

type execResult struct {
	status int
	body   string
	lines  []line
}

func (e *testEnv) post(ctx context.Context, path string, body any) (*http.Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case nil:
		rd = http.NoBody
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// exec runs one /execute request to completion.
func (e *testEnv) exec(t *testing.T, body any) execResult {
	t.Helper()
	resp, err := e.post(context.Background(), "/execute", body)
	if err != nil {
		t.Fatalf("POST /execute: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /execute body: %v", err)
	}
	r := execResult{status: resp.StatusCode, body: string(data)}
	if resp.StatusCode != http.StatusOK {
		return r
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	r.lines = parseLines(t, data)
	return r
}

func (e *testEnv) run(t *testing.T, code string) execResult {
	t.Helper()
	r := e.exec(t, map[string]any{"code": code})
	if r.status != http.StatusOK {
		t.Fatalf("execute %q: status %d: %s", code, r.status, r.body)
	}
	return r
}

func (e *testEnv) runIn(t *testing.T, ctxID, code string) execResult {
	t.Helper()
	r := e.exec(t, map[string]any{"code": code, "context_id": ctxID})
	if r.status != http.StatusOK {
		t.Fatalf("execute %q in %s: status %d: %s", code, ctxID, r.status, r.body)
	}
	return r
}

// parseLines checks the NDJSON framing rules and decodes every line.
func parseLines(t *testing.T, data []byte) []line {
	t.Helper()
	if !bytes.HasSuffix(data, []byte("{\"type\": \"end_of_execution\"}\n")) {
		t.Fatalf("stream does not end with the literal end_of_execution line: %q", tail(string(data)))
	}
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad NDJSON line %q: %v", tail(sc.Text()), err)
		}
		if _, ok := l["type"].(string); !ok {
			t.Fatalf("line without type: %q", sc.Text())
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	ends := 0
	for _, l := range out {
		if l["type"] == "end_of_execution" {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d end_of_execution lines", ends)
	}
	return out
}

func tail(s string) string {
	if len(s) > 300 {
		return "..." + s[len(s)-300:]
	}
	return s
}

func (r execResult) ofType(typ string) []line {
	var out []line
	for _, l := range r.lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

func (r execResult) text(stream string) string {
	var b strings.Builder
	for _, l := range r.ofType(stream) {
		s, _ := l["text"].(string)
		b.WriteString(s)
	}
	return b.String()
}

func (r execResult) mainResult() line {
	for _, l := range r.ofType("result") {
		if l["is_main_result"] == true {
			return l
		}
	}
	return nil
}

func (r execResult) mainText() string {
	if m := r.mainResult(); m != nil {
		s, _ := m["text"].(string)
		return s
	}
	return ""
}

func (r execResult) err() line {
	errs := r.ofType("error")
	if len(errs) > 1 {
		panic("more than one error line")
	}
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func (r execResult) count() int {
	for _, l := range r.ofType("number_of_executions") {
		if n, ok := l["execution_count"].(float64); ok {
			return int(n)
		}
	}
	return -1
}

// mustNoError fails when the execution reported an error.
func (r execResult) mustNoError(t *testing.T) execResult {
	t.Helper()
	if e := r.err(); e != nil {
		t.Fatalf("unexpected error %v: %v\n%v", e["name"], e["value"], e["traceback"])
	}
	return r
}

// streamReader reads an /execute response line by line as it arrives.
type streamReader struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (e *testEnv) open(t *testing.T, ctx context.Context, body any) *streamReader {
	t.Helper()
	resp, err := e.post(ctx, "/execute", body)
	if err != nil {
		t.Fatalf("POST /execute: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &streamReader{resp: resp, sc: sc}
}

// next returns the next line, or nil at the end of the stream.
func (s *streamReader) next(t *testing.T) line {
	t.Helper()
	if !s.sc.Scan() {
		return nil
	}
	var l line
	if err := json.Unmarshal(s.sc.Bytes(), &l); err != nil {
		t.Fatalf("bad line %q: %v", s.sc.Text(), err)
	}
	return l
}

// until reads lines until one of type typ arrives, returning the lines read.
func (s *streamReader) until(t *testing.T, typ string) []line {
	t.Helper()
	var seen []line
	for {
		l := s.next(t)
		if l == nil {
			t.Fatalf("stream ended before a %s line; got %v", typ, seen)
		}
		seen = append(seen, l)
		if l["type"] == typ {
			return seen
		}
	}
}

func (s *streamReader) close() { s.resp.Body.Close() }
