package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Answers of the fake API, shaped as the real one answers.
const (
	sessionJSON = `{"sessionId":"s1","state":"running","sandboxId":"sbx1","pauseOnIdle":false,"idleTimeoutSecs":1800,` +
		`"createdAt":"2026-11-26T09:00:00.123456789Z","lastActivityAt":"2026-11-26T09:30:00.5Z","idleDeadline":"2099-01-01T00:00:00Z"}`
	entryJSON = `{"name":"a.txt","path":"/home/user/a.txt","type":"file","size":5,"modifiedAt":"2026-11-26T09:00:00Z"}`
	doneJSON  = `{"type":"result","result":{"text":"2","isMainResult":true}}` + "\n" +
		`{"type":"done","summary":{"success":true,"durationMs":1,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n"
)

// TestJSONEverywhere: every client command takes --json and prints one
// JSON document on stdout, holding the API's answer.
func TestJSONEverywhere(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/s1/execute":           reply(200, `{"success":true,"stdout":"","stderr":"","results":[{"text":"2","isMainResult":true}],"durationMs":1}`),
		"POST /v1/sessions/s1/install":           reply(200, `{"success":true,"exitCode":0,"stdout":"ok","stderr":"","durationMs":5,"truncated":false,"restarted":false}`),
		"PUT /v1/sessions/s1/files/content":      reply(200, entryJSON),
		"GET /v1/sessions/s1/files/content":      func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") },
		"GET /v1/sessions/s1/files":              reply(200, `{"entries":[`+entryJSON+`]}`),
		"DELETE /v1/sessions/s1/files":           reply(204, ""),
		"POST /v1/sessions/s1/files/upload-urls": reply(200, `{"status":"success","uploaded":[{"sourceUrl":"https://x/a","path":"/home/user/a","sizeBytes":1}],"errors":[],"restarted":false}`),
		"POST /v1/sessions/s1/runs":              reply(202, `{"runId":"r1","status":"queued"}`),
		"GET /v1/runs/r1":                        reply(200, `{"runId":"r1","sessionId":"s1","status":"succeeded","result":{"success":true,"stdout":"","stderr":"","results":[],"durationMs":1}}`),
		"GET /v1/sessions":                       reply(200, `{"sessions":[`+sessionJSON+`]}`),
		"POST /v1/sessions/s1/sandbox/start":     reply(200, sessionJSON),
		"GET /v1/sessions/s1/sandbox":            reply(200, sessionJSON),
		"POST /v1/sessions/s1/sandbox/stop":      reply(200, strings.Replace(sessionJSON, "running", "stopped", 1)),
		"POST /v1/sessions/s1/reset":             reply(204, ""),
		"POST /v1/sessions/s1/checkpoint":        reply(200, `{"at":"2026-11-26T09:00:00Z","files":3,"bytes":1234}`),
		"DELETE /v1/sessions/s1":                 reply(204, ""),
		"POST /v1/sessions/s1/contexts":          reply(200, `{"contextId":"c1","language":"python","cwd":"/home/user","createdAt":"2026-11-26T09:00:00Z"}`),
		"GET /v1/sessions/s1/contexts":           reply(200, `{"contexts":[]}`),
		"POST /v1/sessions/s1/contexts/c1/reset": reply(204, ""),
		"DELETE /v1/sessions/s1/contexts/c1":     reply(204, ""),
		"POST /v1/sessions/s1/commands":          reply(200, `{"exitCode":0,"stdout":"hi\n","stderr":"","durationMs":3,"truncated":false,"timedOut":false,"restarted":false}`),
		"GET /v1/sessions/s1/commands":           reply(200, `{"commands":[]}`),
		"POST /v1/sessions/s1/commands/c1/kill":  reply(204, ""),
		"GET /v1/sessions/s1/commands/c1/output": reply(200, `{"commandId":"c1","running":true,"stdout":"hi\n","stderr":"","more":false,`+
			`"stdoutPath":"/tmp/sessionbox-commands/c1/stdout","stderrPath":"/tmp/sessionbox-commands/c1/stderr","stdoutBytes":3,"stderrBytes":0}`),
		"GET /v1/sessions/s1/sandbox/metrics": reply(200, `{"timestamp":"2026-11-26T09:00:00Z","cpuCount":2,"cpuUsedPct":12.5,`+
			`"memUsedBytes":1048576,"memTotalBytes":4194304,"diskUsedBytes":1,"diskTotalBytes":2,"samples":[]}`),
	})
	local := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(local, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		key  string // a key the printed object must have
	}{
		{[]string{"exec", "1+1"}, "results"},
		{[]string{"install", "pandas"}, "exitCode"},
		{[]string{"files", "put", local, "a.txt"}, "modifiedAt"},
		{[]string{"files", "get", "a.txt", filepath.Join(t.TempDir(), "b.txt")}, "sizeBytes"},
		{[]string{"files", "ls"}, "entries"},
		{[]string{"files", "rm", "a.txt"}, "removed"},
		{[]string{"files", "fetch", "https://x/a"}, "uploaded"},
		{[]string{"runs", "submit", "1+1"}, "runId"},
		{[]string{"runs", "get", "r1"}, "result"},
		{[]string{"sessions"}, "sessions"},
		{[]string{"start"}, "sandboxId"},
		{[]string{"status"}, "lastActivityAt"},
		{[]string{"stop"}, "state"},
		{[]string{"reset"}, "reset"},
		{[]string{"checkpoint"}, "files"},
		{[]string{"rm", "s1"}, "deleted"},
		{[]string{"contexts", "create"}, "contextId"},
		{[]string{"contexts", "ls"}, "contexts"},
		{[]string{"contexts", "reset", "c1"}, "reset"},
		{[]string{"contexts", "rm", "c1"}, "deleted"},
		{[]string{"metrics"}, "cpuUsedPct"},
		{[]string{"cmd", "run", "echo", "hi"}, "exitCode"},
		{[]string{"cmd", "ls"}, "commands"},
		{[]string{"cmd", "kill", "c1"}, "killed"},
		{[]string{"cmd", "output", "c1"}, "stdoutPath"},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.args[0]] = true
		args := append(tc.args, "--json", "--session", "s1")
		if tc.args[0] == "sessions" || tc.args[0] == "rm" {
			args = append(tc.args, "--json")
		}
		code, stdout, stderr := cli(t, api.srv.URL, args...)
		var v map[string]any
		if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v[tc.key] == nil {
			t.Errorf("%q: exit %d, stdout %q (want JSON with %q), stderr %q", args, code, stdout, tc.key, stderr)
		}
	}
	for _, c := range clientCommands() {
		if !covered[c.name] {
			t.Errorf("command %s has no --json case here", c.name)
		}
	}
}

// TestReadableOutput: sessions, status and runs show times as RFC 3339
// with a relative age, sizes in units, never nanoseconds.
func TestReadableOutput(t *testing.T) {
	recent := time.Now().Add(-5 * time.Minute).UTC().Format(time.RFC3339Nano)
	view := strings.Replace(sessionJSON, "2026-11-26T09:30:00.5Z", recent, 1)
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"GET /v1/sessions":            reply(200, `{"sessions":[`+view+`]}`),
		"GET /v1/sessions/s1/sandbox": reply(200, view),
		"GET /v1/runs/r1": reply(200, `{"runId":"r1","sessionId":"s1","status":"failed","error":"the sandbox died",`+
			`"createdAt":"2026-11-26T09:00:00Z","startedAt":"2026-11-26T09:00:01Z","finishedAt":"2026-11-26T09:00:02Z"}`),
	})
	cases := []struct {
		args        []string
		code        int
		stdout      []string
		stderr      []string
		notInStdout string
		notInStderr string
	}{
		{args: []string{"sessions"}, stdout: []string{"s1", "running", "sbx1", "5m ago"}, notInStdout: "2026-11-26T09"},
		{args: []string{"status", "--session", "s1"}, stdout: []string{"created", localTime("2026-11-26T09:00:00Z") + " (", " ago)", "idle until", "from now), then stopped"}, notInStdout: ".123456789"},
		{args: []string{"runs", "get", "r1"}, code: 1, stderr: []string{"status", "failed", "finished", localTime("2026-11-26T09:00:02Z") + " (", "run r1 failed: the sandbox died"}, notInStderr: "+0000"},
	}
	for _, tc := range cases {
		code, stdout, stderr := cli(t, api.srv.URL, tc.args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, stderr)
		}
		for _, w := range tc.stdout {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: stdout %q lacks %q", tc.args, stdout, w)
			}
		}
		for _, w := range tc.stderr {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
		if (tc.notInStdout != "" && strings.Contains(stdout, tc.notInStdout)) || (tc.notInStderr != "" && strings.Contains(stderr, tc.notInStderr)) {
			t.Errorf("%q: output shows raw times:\n%s%s", tc.args, stdout, stderr)
		}
	}
}

// localTime is an RFC 3339 time as the CLI shows it, in the local zone.
func localTime(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		panic(err)
	}
	return t.Local().Format(time.RFC3339)
}

// TestSaveImages: exec --save-images writes each PNG and JPEG result, shown
// while streaming or the main result, to a new file in the directory,
// never over one already there, and prints each path.
func TestSaveImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake png")
	jpeg := []byte("\xff\xd8\xff fake jpeg")
	b64 := base64.StdEncoding.EncodeToString
	stream := `{"type":"stdout","text":"drawing\n"}` + "\n" +
		`{"type":"result","result":{"png":"` + b64(png) + `","text":"<Figure>"}}` + "\n" +
		`{"type":"result","result":{"jpeg":"` + b64(jpeg) + `","isMainResult":true}}` + "\n" +
		`{"type":"done","summary":{"success":true,"durationMs":1,"truncated":false,"restarted":false,"kernelRestarted":false,"timedOut":false}}` + "\n"
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/default/execute/stream": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, stream)
		},
		"POST /v1/sessions/default/execute": reply(200, `{"success":true,"stdout":"","stderr":"","results":[{"png":"`+b64(png)+`","isMainResult":true}],"durationMs":1}`),
	})
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file from an earlier run stays as it is.
	if err := os.WriteFile(filepath.Join(dir, "result-1.png"), []byte("earlier"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, api.srv.URL, "exec", "plot()", "--save-images", dir)
	p2, p3 := filepath.Join(dir, "result-2.png"), filepath.Join(dir, "result-3.jpeg")
	if code != 0 || stdout != "drawing\n"+p2+"\n"+p3+"\n" || strings.Contains(stderr, "[display") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	for p, want := range map[string][]byte{filepath.Join(dir, "result-1.png"): []byte("earlier"), p2: png, p3: jpeg} {
		if b, err := os.ReadFile(p); err != nil || string(b) != string(want) {
			t.Errorf("%s holds %q (%v), want %q", p, b, err, want)
		}
	}
	// With --json the answer alone is on stdout; the paths go to stderr.
	code, stdout, stderr = cli(t, api.srv.URL, "exec", "--json", "plot()", "--save-images", dir)
	if p4 := filepath.Join(dir, "result-4.png"); code != 0 || !json.Valid([]byte(stdout)) || stderr != p4+"\n" {
		t.Fatalf("--json: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

// TestProgressBar: a transfer over progressMin draws a bar on stderr when
// it is a terminal; a small one, or stderr not a terminal, draws none.
func TestProgressBar(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"PUT /v1/sessions/default/files/content": reply(200, entryJSON),
		"GET /v1/sessions/default/files/content": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(progressMin+1))
			if r.URL.Query().Get("path") == "cut.bin" {
				// Half, then the connection ends.
				_, _ = w.Write(make([]byte, progressMin/2))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			_, _ = w.Write(make([]byte, progressMin+1))
		},
	})
	dir := t.TempDir()
	big, small := filepath.Join(dir, "big.bin"), filepath.Join(dir, "small.bin")
	if err := os.WriteFile(big, make([]byte, progressMin+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	was := stderrIsTerminal
	t.Cleanup(func() { stderrIsTerminal = was })
	cases := []struct {
		file     string
		terminal bool
		bar      bool
	}{{big, true, true}, {big, false, false}, {small, true, false}}
	for _, tc := range cases {
		stderrIsTerminal = func() bool { return tc.terminal }
		code, _, stderr := cli(t, api.srv.URL, "files", "put", tc.file, "x.bin")
		if bar := strings.Contains(stderr, "100%") && strings.Contains(stderr, "put big.bin"); code != 0 || bar != tc.bar {
			t.Errorf("put %s (terminal %v): exit %d, bar %v, want %v; stderr %q", filepath.Base(tc.file), tc.terminal, code, bar, tc.bar, stderr)
		}
	}
	stderrIsTerminal = func() bool { return true }
	code, _, stderr := cli(t, api.srv.URL, "files", "get", "big.bin", filepath.Join(dir, "got.bin"))
	if code != 0 || !strings.Contains(stderr, "get big.bin") || !strings.Contains(stderr, "100%") {
		t.Errorf("get big.bin: exit %d stderr %q, want a full bar", code, stderr)
	}
	// A download that fails leaves its bar where it stopped.
	code, _, stderr = cli(t, api.srv.URL, "files", "get", "cut.bin", filepath.Join(dir, "cut.bin"))
	if code != 1 || !strings.Contains(stderr, "get cut.bin") || strings.Contains(stderr, "100%") {
		t.Errorf("get cut.bin: exit %d stderr %q, want a bar short of 100%%", code, stderr)
	}
}

// TestRunsWait: runs get --wait polls until the run has finished, then
// shows its output; a run whose code raised exits 1.
func TestRunsWait(t *testing.T) {
	var polls atomic.Int32
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"GET /v1/runs/r1": func(w http.ResponseWriter, r *http.Request) {
			if polls.Add(1) < 3 {
				reply(200, `{"runId":"r1","sessionId":"s1","status":"running"}`)(w, r)
				return
			}
			reply(200, `{"runId":"r1","sessionId":"s1","status":"succeeded","result":{"success":false,"stdout":"partial\n","stderr":"",`+
				`"results":[],"error":{"name":"ValueError","value":"bad","traceback":"Traceback ...\nValueError: bad"},"durationMs":1}}`)(w, r)
		},
	})
	code, stdout, stderr := cli(t, api.srv.URL, "runs", "get", "--wait", "r1")
	if code != 1 || stdout != "partial\n" || !strings.Contains(stderr, "ValueError: bad") || !strings.Contains(stderr, "raised an exception") || polls.Load() != 3 {
		t.Fatalf("exit %d stdout %q stderr %q after %d polls", code, stdout, stderr, polls.Load())
	}
}

// TestExecFromStdin: "-" reads the code from stdin.
func TestExecFromStdin(t *testing.T) {
	api := newAPIFake(t, map[string]http.HandlerFunc{"POST /v1/sessions/default/execute/stream": reply(200, doneJSON)})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(w, "import sys\nprint(1)\n")
	_ = w.Close()
	was := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = was })
	code, stdout, stderr := cli(t, api.srv.URL, "exec", "-")
	if got := api.last(t).body; code != 0 || stdout != "2\n" || !strings.Contains(got, `"code":"import sys\nprint(1)\n"`) {
		t.Fatalf("exit %d stdout %q stderr %q; sent %s", code, stdout, stderr, got)
	}
}

// TestInstallStreams: install prints pip's output on stderr as it comes
// and what was installed on stdout; pip failing exits 1 with its code.
func TestInstallStreams(t *testing.T) {
	line := func(typ, text string) string { return `{"type":"` + typ + `","text":"` + text + `"}` + "\n" }
	done := func(ok bool, code int) string {
		return `{"type":"done","summary":{"success":` + map[bool]string{true: "true", false: "false"}[ok] +
			`,"exitCode":` + strconv.Itoa(code) + `,"durationMs":1500,"truncated":false,"restarted":false}}` + "\n"
	}
	api := newAPIFake(t, map[string]http.HandlerFunc{
		"POST /v1/sessions/default/install/stream": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			if strings.Contains(r.URL.RawQuery+readBody(r), "nosuchpkg") {
				_, _ = io.WriteString(w, line("stderr", "ERROR: No matching distribution found for nosuchpkg\\n")+done(false, 1))
				return
			}
			_, _ = io.WriteString(w, line("stdout", "Collecting tiny\\n")+line("stdout", "Successfully installed tiny-1.0\\n")+done(true, 0))
		},
	})
	code, stdout, stderr := cli(t, api.srv.URL, "install", "tiny")
	if code != 0 || stdout != "installed tiny in 1.5s\n" || stderr != "Collecting tiny\nSuccessfully installed tiny-1.0\n" {
		t.Fatalf("install tiny: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, api.srv.URL, "install", "nosuchpkg")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "No matching distribution found for nosuchpkg\n") || !strings.Contains(stderr, "pip exited 1") {
		t.Fatalf("install nosuchpkg: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func readBody(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}
