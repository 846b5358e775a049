package smoke

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// req is one call; key "" sends the configured key, "-" none.
type req struct {
	method, path string
	body         []byte
	header       map[string]string
	key          string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (s *suite) do(ctx context.Context, r req) (resp, error) {
	hr, err := http.NewRequestWithContext(ctx, r.method, s.cfg.URL+r.path, bytes.NewReader(r.body))
	if err != nil {
		return resp{}, fmt.Errorf("build request: %w", err)
	}
	switch r.key {
	case "":
		hr.Header.Set("Authorization", "Bearer "+s.cfg.Key)
	case "-":
	default:
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	if s.cfg.Origin != "" {
		hr.Header.Set("Origin", s.cfg.Origin)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := s.cfg.Client.Do(hr)
	if err != nil {
		return resp{}, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, fmt.Errorf("%s %s: read body: %w", r.method, r.path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: body}, nil
}

// json calls with a JSON body and wants status and a JSON object back.
func (s *suite) json(ctx context.Context, method, path, body string, status int) (map[string]any, error) {
	r := req{method: method, path: path, header: map[string]string{"Accept": "application/json"}}
	if body != "" {
		r.body = []byte(body)
		r.header["Content-Type"] = "application/json"
	}
	res, err := s.do(ctx, r)
	if err != nil {
		return nil, err
	}
	if res.status != status {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %.300s", method, path, res.status, status, res.body)
	}
	var m map[string]any
	if err := json.Unmarshal(res.body, &m); err != nil {
		return nil, fmt.Errorf("%s %s: not a JSON object: %.300s", method, path, res.body)
	}
	return m, nil
}

// problem checks a problem+json answer of one of statuses, with the CORS
// headers a page at the configured origin needs to read it.
func (s *suite) problem(res resp, statuses ...int) error {
	ok := false
	for _, st := range statuses {
		ok = ok || res.status == st
	}
	if !ok {
		return fmt.Errorf("status %d, want %v: %.300s", res.status, statuses, res.body)
	}
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		return fmt.Errorf("status %d as %q, want application/problem+json: %.300s", res.status, ct, res.body)
	}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(res.body, &p); err != nil || p.Type == "" || p.Title == "" {
		return fmt.Errorf("not a problem: %.300s", res.body)
	}
	if s.cfg.Origin != "" {
		if got := res.header.Get("Access-Control-Allow-Origin"); got != s.cfg.Origin && got != "*" {
			return fmt.Errorf("status %d without CORS for %s (Access-Control-Allow-Origin %q): a page cannot read it", res.status, s.cfg.Origin, got)
		}
	}
	return nil
}

func (s *suite) healthz(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "GET", path: "/healthz", key: "-"})
	if err != nil {
		return err
	}
	if res.status != http.StatusOK || !bytes.Contains(res.body, []byte(`"ok"`)) {
		return fmt.Errorf("status %d: %.300s", res.status, res.body)
	}
	return nil
}

func (s *suite) unauthorized(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "GET", path: "/v1/sessions", key: "-"})
	if err != nil {
		return err
	}
	return s.problem(res, http.StatusUnauthorized)
}

// unknownKey: API Gateway answers 401 or 403 depending on how the
// authorizer refused; local serve 401.
func (s *suite) unknownKey(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "GET", path: "/v1/sessions", key: "sbx_smoke_" + randomHex(16)})
	if err != nil {
		return err
	}
	return s.problem(res, http.StatusUnauthorized, http.StatusForbidden)
}

func (s *suite) unknownRoute(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "GET", path: "/v1/no-such-route"})
	if err != nil {
		return err
	}
	return s.problem(res, http.StatusNotFound)
}

func (s *suite) notFound(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "GET", path: "/v1/sessions/smoke-none-" + randomHex(6) + "/sandbox"})
	if err != nil {
		return err
	}
	return s.problem(res, http.StatusNotFound)
}

func (s *suite) start(ctx context.Context) error {
	s.started = true
	_, err := s.json(ctx, "POST", s.session("/sandbox/start"), `{"type":"code_interpreter"}`, http.StatusOK)
	return err
}

func (s *suite) executeJSON(ctx context.Context) error {
	m, err := s.json(ctx, "POST", s.session("/execute"), `{"code":"print(6*7)"}`, http.StatusOK)
	if err != nil {
		return err
	}
	if m["success"] != true || m["stdout"] != "42\n" {
		return fmt.Errorf("answer %v, want success and stdout 42", m)
	}
	return nil
}

func (s *suite) executeNDJSON(ctx context.Context) error {
	lines, err := s.stream(ctx, `{"code":"print('streamed')"}`)
	if err != nil {
		return err
	}
	return wantStreamed(lines, "streamed\n")
}

// stream executes code with Accept: application/x-ndjson and returns the
// lines' types and stdout.
func (s *suite) stream(ctx context.Context, body string) ([]map[string]any, error) {
	res, err := s.do(ctx, req{method: "POST", path: s.session("/execute"), body: []byte(body),
		header: map[string]string{"Accept": "application/x-ndjson", "Content-Type": "application/json"}})
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK || !strings.HasPrefix(res.header.Get("Content-Type"), "application/x-ndjson") {
		return nil, fmt.Errorf("status %d as %q: %.300s", res.status, res.header.Get("Content-Type"), res.body)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("NDJSON line %q: %w", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines, nil
}

func wantStreamed(lines []map[string]any, stdout string) error {
	var out strings.Builder
	for _, l := range lines {
		if l["type"] == "stdout" {
			t, _ := l["text"].(string)
			out.WriteString(t)
		}
	}
	if len(lines) < 2 || lines[0]["type"] != "start" || lines[len(lines)-1]["type"] != "done" || out.String() != stdout {
		return fmt.Errorf("lines %v, want start, stdout %q, done", lines, stdout)
	}
	return nil
}

func (s *suite) binaryRoundTrip(ctx context.Context) error {
	data := make([]byte, 64<<10)
	_, _ = rand.Read(data)
	path := s.session("/files/content?path=smoke/bytes.bin")
	res, err := s.do(ctx, req{method: "PUT", path: path, body: data,
		header: map[string]string{"Content-Type": "application/octet-stream", "Accept": "application/json"}})
	if err != nil {
		return err
	}
	if res.status != http.StatusOK {
		return fmt.Errorf("write: status %d: %.300s", res.status, res.body)
	}
	for _, accept := range []string{"*/*", ""} {
		r := req{method: "GET", path: path, header: map[string]string{}}
		if accept != "" {
			r.header["Accept"] = accept
		}
		res, err := s.do(ctx, r)
		if err != nil {
			return err
		}
		if res.status != http.StatusOK || !bytes.Equal(res.body, data) {
			return fmt.Errorf("read with Accept %q: status %d, %d bytes (%.40q...), want the %d bytes written",
				accept, res.status, len(res.body), res.body, len(data))
		}
	}
	return nil
}

func (s *suite) tooLarge(ctx context.Context) error {
	res, err := s.do(ctx, req{method: "PUT", path: s.session("/files/content?path=smoke/big.bin"),
		body: make([]byte, s.cfg.InlineLimit+1), header: map[string]string{"Content-Type": "application/octet-stream"}})
	if err != nil {
		return err
	}
	return s.problem(res, http.StatusRequestEntityTooLarge)
}

func (s *suite) runToCompletion(ctx context.Context) error {
	m, err := s.json(ctx, "POST", s.session("/runs"), `{"code":"print('ran')"}`, http.StatusAccepted)
	if err != nil {
		return err
	}
	id, _ := m["runId"].(string)
	if id == "" {
		return fmt.Errorf("no runId in %v", m)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		m, err = s.json(ctx, "GET", "/v1/runs/"+id, "", http.StatusOK)
		if err != nil {
			return err
		}
		switch m["status"] {
		case "succeeded":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("run %s ended %v: %v", id, m["status"], m)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("run %s not done after 3 minutes: %v", id, m)
}

func (s *suite) silentCell(ctx context.Context) error {
	secs := int(s.cfg.SilentCell.Seconds())
	code := fmt.Sprintf("import time\ntime.sleep(%d)\nprint('awake')", secs)
	body, _ := json.Marshal(map[string]any{"code": code, "timeoutSecs": secs + 60})
	lines, err := s.stream(ctx, string(body))
	if err != nil {
		return err
	}
	return wantStreamed(lines, "awake\n")
}

// rateLimited makes quick calls until the principal's rate answers 429.
func (s *suite) rateLimited(ctx context.Context) error {
	for range s.cfg.RateProbe {
		res, err := s.do(ctx, req{method: "GET", path: s.session("/sandbox")})
		if err != nil {
			return err
		}
		if res.status == http.StatusOK {
			continue
		}
		if err := s.problem(res, http.StatusTooManyRequests); err != nil {
			return err
		}
		if secs, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || secs < 1 {
			return fmt.Errorf("429 with Retry-After %q, want whole seconds", res.header.Get("Retry-After"))
		}
		return nil
	}
	return errors.New("no 429 after " + strconv.Itoa(s.cfg.RateProbe) + " quick calls: is the per-principal rate set?")
}

// presignedUpload is a browser's large upload: files/upload-url, the
// bucket's CORS preflight and PUT from the page's origin, then import.
func (s *suite) presignedUpload(ctx context.Context) error {
	data := make([]byte, 32<<10)
	_, _ = rand.Read(data)
	body, _ := json.Marshal(map[string]any{"path": "smoke/presigned.bin", "sizeBytes": len(data)})
	m, err := s.json(ctx, "POST", s.session("/files/upload-url"), string(body), http.StatusOK)
	if err != nil {
		return err
	}
	url, _ := m["uploadUrl"].(string)
	method, _ := m["method"].(string)
	id, _ := m["transferId"].(string)
	if url == "" || method == "" || id == "" {
		return fmt.Errorf("upload-url answered %v", m)
	}
	origin := cmp.Or(s.cfg.Origin, "https://smoke.example")
	pre, err := s.raw(ctx, http.MethodOptions, url, nil, map[string]string{
		"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "content-type"})
	if err != nil {
		return err
	}
	if pre.status >= 300 || !allows(pre.header, origin) {
		return fmt.Errorf("bucket preflight from %s: %d, Access-Control-Allow-Origin %q", origin, pre.status, pre.header.Get("Access-Control-Allow-Origin"))
	}
	hdr := map[string]string{"Origin": origin}
	if h, ok := m["headers"].(map[string]any); ok {
		for k, v := range h {
			hdr[k], _ = v.(string)
		}
	}
	put, err := s.raw(ctx, method, url, data, hdr)
	if err != nil {
		return err
	}
	if put.status >= 300 || !allows(put.header, origin) {
		return fmt.Errorf("%s to the bucket from %s: %d (Access-Control-Allow-Origin %q): %.300s", method, origin, put.status, put.header.Get("Access-Control-Allow-Origin"), put.body)
	}
	if _, err := s.json(ctx, "POST", s.session("/files/import"), `{"transferId":"`+id+`"}`, http.StatusOK); err != nil {
		return err
	}
	res, err := s.do(ctx, req{method: "GET", path: s.session("/files/content?path=smoke/presigned.bin"), header: map[string]string{"Accept": "*/*"}})
	if err != nil {
		return err
	}
	if res.status != http.StatusOK || !bytes.Equal(res.body, data) {
		return fmt.Errorf("read back: %d, %d bytes, want the %d uploaded", res.status, len(res.body), len(data))
	}
	return nil
}

// raw is a request outside the API (a presigned URL), without the key.
func (s *suite) raw(ctx context.Context, method, url string, body []byte, header map[string]string) (resp, error) {
	hr, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return resp{}, fmt.Errorf("build request: %w", err)
	}
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	res, err := s.cfg.Client.Do(hr)
	if err != nil {
		return resp{}, fmt.Errorf("%s presigned URL: %w", method, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, fmt.Errorf("%s presigned URL: read body: %w", method, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}, nil
}

func allows(h http.Header, origin string) bool {
	got := h.Get("Access-Control-Allow-Origin")
	return got == origin || got == "*"
}
