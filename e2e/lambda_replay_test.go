package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sessionbox/sessionbox/pkg/api"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/lambdaenvtest"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/mcpenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

// eventsDir is the repository's sample events.
const eventsDir = "../events"

// answer is an API function's response, buffered or streamed.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, a.body)
	}
	return m
}

// problem checks a problem+json answer of status.
func (a answer) problem(t *testing.T, status int) map[string]any {
	t.Helper()
	if a.status != status || a.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d (%s), want %d problem+json: %s", a.status, a.header.Get("Content-Type"), status, a.body)
	}
	p := a.json(t)
	if typ, _ := p["type"].(string); !strings.HasPrefix(typ, "https://sessionbox.dev/problems/") || p["detail"] == "" {
		t.Fatalf("not a sessionbox problem: %s", a.body)
	}
	return p
}

func (a answer) ok(t *testing.T, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
}

// apiReplay is one API sample and what its function must answer.
type apiReplay struct {
	file  string
	check func(t *testing.T, a answer)
}

func loadEvent[T any](t *testing.T, file string) T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var ev T
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return ev
}

// lambdaCtx is an invocation's context as the runtime gives it.
func lambdaCtx(t *testing.T, requestID string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
}

// invokeAPI runs an API sample through the handler its function serves:
// streamed for start, stop, execute, install, fetch and mcp, buffered for
// the rest (with the playground page in front for status), as
// functions/*/main.go serve them.
func invokeAPI(t *testing.T, envs map[string]*sessionenv.Env, file string, edit func(*events.APIGatewayProxyRequest)) answer {
	t.Helper()
	fn := strings.Split(file, "/")[0]
	ev := loadEvent[events.APIGatewayProxyRequest](t, file)
	if edit != nil {
		edit(&ev)
	}
	ctx := lambdaCtx(t, "req-"+strings.ReplaceAll(file, "/", "-"))
	switch fn {
	case "start", "stop", "execute", "install", "fetch", "mcp":
		h := envs[fn].StreamingAPI()
		if fn == "mcp" {
			h = mcpenv.StreamingAPI(envs[fn])
		}
		res, err := h(ctx, ev)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return streamedAnswer(t, res)
	default:
		h := envs[fn].BufferedAPI()
		if fn == "status" {
			h = envs[fn].StatusAPI()
		}
		res, err := h(ctx, ev)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		body := []byte(res.Body)
		if res.IsBase64Encoded {
			if body, err = base64.StdEncoding.DecodeString(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		return answer{status: res.StatusCode, header: header(res.Headers, res.MultiValueHeaders), body: body}
	}
}

// streamedAnswer reads a streaming response the way Lambda sends it to API
// Gateway: the JSON prelude, eight NUL bytes, then the body.
func streamedAnswer(t *testing.T, res *events.APIGatewayProxyStreamingResponse) answer {
	t.Helper()
	if ct := res.ContentType(); ct != "application/vnd.awslambda.http-integration-response" {
		t.Fatalf("streaming content type %q", ct)
	}
	raw, err := io.ReadAll(res)
	if err != nil {
		t.Fatal(err)
	}
	return parseStreamed(t, raw)
}

// parseStreamed splits a streamed answer into its prelude and body.
func parseStreamed(t *testing.T, raw []byte) answer {
	t.Helper()
	prelude, body, found := bytes.Cut(raw, make([]byte, 8))
	if !found {
		t.Fatalf("no prelude separator in %q", raw)
	}
	var p struct {
		StatusCode        int                 `json:"statusCode"`
		Headers           map[string]string   `json:"headers"`
		MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		t.Fatalf("prelude %q: %v", prelude, err)
	}
	return answer{status: p.StatusCode, header: header(p.Headers, p.MultiValueHeaders), body: body}
}

func header(single map[string]string, multi map[string][]string) http.Header {
	h := http.Header{}
	for k, vs := range multi {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range single {
		h.Set(k, v)
	}
	return h
}

func ndjsonLines(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

// apiReplays are the API samples in the order a client would send them:
// one session of alice's, started, used and stopped.
func apiReplays() []apiReplay {
	return []apiReplay{
		{"status/healthz.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if a.json(t)["status"] != "ok" {
				t.Fatalf("healthz %s", a.body)
			}
		}},
		{"status/openapi.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if doc := a.json(t); doc["openapi"] == nil || doc["paths"] == nil {
				t.Fatalf("not an OpenAPI document: %.200s", a.body)
			}
			if a.header.Get("Content-Encoding") != "" || !bytes.Equal(a.body, api.OpenAPI()) {
				t.Fatalf("Content-Encoding %q, %d bytes: want the document as is", a.header.Get("Content-Encoding"), len(a.body))
			}
		}},
		{"status/openapi-gzip.json", func(t *testing.T, a answer) {
			// A browser's Accept-Encoding: the document gzipped, through
			// the buffered integration's base64 body.
			a.ok(t, http.StatusOK)
			if a.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip", a.header.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(a.body))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(doc, api.OpenAPI()) {
				t.Fatalf("gunzipped %d bytes (%v), want the document", len(doc), err)
			}
		}},
		{"status/playground-page.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if ct, csp := a.header.Get("Content-Type"), a.header.Get("Content-Security-Policy"); ct != "text/html; charset=utf-8" ||
				!strings.Contains(csp, "script-src 'self'") || !strings.Contains(string(a.body), `src="playground/app.js"`) {
				t.Fatalf("not the playground page: %s, CSP %q: %.200s", ct, csp, a.body)
			}
		}},
		{"status/playground-page-no-slash.json", func(t *testing.T, a answer) {
			// Opened as .../prod, the page moves to .../prod/ so its files
			// resolve below the stage.
			if a.status != http.StatusMovedPermanently || a.header.Get("Location") != "prod/" {
				t.Fatalf("status %d, Location %q; want 301 to prod/", a.status, a.header.Get("Location"))
			}
		}},
		{"status/playground-script.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if ct := a.header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" || !strings.Contains(string(a.body), "v1/sessions") {
				t.Fatalf("not the playground's script: %s: %.200s", ct, a.body)
			}
		}},
		{"start/start-bad-session-id.json", func(t *testing.T, a answer) { a.problem(t, http.StatusBadRequest) }},
		{"start/start-code-interpreter.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			s := a.json(t)
			if s["sessionId"] != "chat-42" || s["state"] != "running" || s["sandboxId"] == "" || s["idleTimeoutSecs"] != 600.0 {
				t.Fatalf("start: %s", a.body)
			}
		}},
		{"status/sandbox-status.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if s := a.json(t); s["state"] != "running" || s["idleDeadline"] == nil || s["lifetimeDeadline"] == nil {
				t.Fatalf("status: %s", a.body)
			}
		}},
		{"status/sandbox-metrics.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			m := a.json(t)
			if used, total := m["memUsedBytes"].(float64), m["memTotalBytes"].(float64); used <= 0 || used > total || m["timestamp"] == nil {
				t.Fatalf("metrics: %s", a.body)
			}
		}},
		{"execute/create-context.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusCreated)
			if c := a.json(t); c["contextId"] == "" || c["language"] != "python" || c["cwd"] != "/tmp" {
				t.Fatalf("create context: %s", a.body)
			}
		}},
		{"execute/run-command.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if c := a.json(t); c["exitCode"] != float64(3) || c["stdout"] != "hi\n/tmp\n" || c["timedOut"] != false {
				t.Fatalf("run command: %s", a.body)
			}
		}},
		{"execute/list-commands.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if c, ok := a.json(t)["commands"].([]any); !ok || len(c) != 0 {
				t.Fatalf("list commands: %s", a.body)
			}
		}},
		{"execute/execute-missing-code.json", func(t *testing.T, a answer) { a.problem(t, http.StatusBadRequest) }},
		{"execute/execute.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("content type %q", ct)
			}
			var r struct {
				Success bool
				Results []struct {
					Text         string
					IsMainResult bool
				}
			}
			if err := json.Unmarshal(a.body, &r); err != nil || !r.Success || len(r.Results) != 1 || r.Results[0].Text != "42" {
				t.Fatalf("execute: %s (%v)", a.body, err)
			}
		}},
		{"execute/execute-ndjson.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if ct := a.header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Fatalf("content type %q", ct)
			}
			lines := ndjsonLines(t, a.body)
			if len(lines) < 3 || lines[0]["type"] != "start" {
				t.Fatalf("stream does not begin with its start line: %s", a.body)
			}
			first, last := lines[1], lines[len(lines)-1]
			if first["type"] != "stdout" || first["text"] != "hello\n" || last["type"] != "done" {
				t.Fatalf("stream: %s", a.body)
			}
			if res, _ := last["summary"].(map[string]any); res["success"] != true || res["stdout"] != nil {
				t.Fatalf("last line: %v", last)
			}
		}},
		{"execute/execute-stream.json", func(t *testing.T, a answer) {
			// The stream operation streams without an Accept header.
			a.ok(t, http.StatusOK)
			if ct := a.header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Fatalf("content type %q", ct)
			}
			lines := ndjsonLines(t, a.body)
			if len(lines) < 3 || lines[0]["type"] != "start" || lines[1]["text"] != "streamed\n" {
				t.Fatalf("stream: %s", a.body)
			}
			if last := lines[len(lines)-1]; last["type"] != "done" {
				t.Fatalf("last line: %v", last)
			}
		}},
		{"mcp/tools-call.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			// One server-sent event holds the JSON-RPC answer: the tool
			// ran in the session execute.json set x in.
			_, data, ok := strings.Cut(string(a.body), "data: ")
			var msg struct {
				ID     int `json:"id"`
				Result struct {
					IsError bool `json:"isError"`
					Content []struct{ Text string }
				}
			}
			if !ok || json.Unmarshal([]byte(strings.SplitN(data, "\n", 2)[0]), &msg) != nil || msg.ID != 7 ||
				msg.Result.IsError || len(msg.Result.Content) == 0 || !strings.Contains(msg.Result.Content[0].Text, "21") {
				t.Fatalf("MCP tools/call: %s", a.body)
			}
		}},
		{"execute/reset.json", func(t *testing.T, a answer) { a.ok(t, http.StatusNoContent) }},
		{"execute/execute-once.json", func(t *testing.T, a answer) {
			// A sandbox of its own, killed afterwards; the artifact was
			// copied out first.
			a.ok(t, http.StatusOK)
			var r struct {
				Success   bool
				Results   []struct{ Text string }
				Artifacts []struct{ Path, DownloadURL string }
			}
			if err := json.Unmarshal(a.body, &r); err != nil || !r.Success || len(r.Results) != 1 || r.Results[0].Text != "45" ||
				len(r.Artifacts) != 1 || r.Artifacts[0].Path != "/home/user/once.txt" || r.Artifacts[0].DownloadURL == "" {
				t.Fatalf("execute once: %s", a.body)
			}
		}},
		{"execute/submit-run.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusAccepted)
			if r := a.json(t); !strings.HasPrefix(r["runId"].(string), "run_") || r["status"] != "queued" {
				t.Fatalf("submit run: %s", a.body)
			}
		}},
		{"files/write-content.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if e := a.json(t); e["path"] != "/home/user/notes/hello.txt" || e["size"] != float64(len("hello from an event\n")) {
				t.Fatalf("write: %s", a.body)
			}
		}},
		{"files/read-content.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if string(a.body) != "hello from an event\n" {
				t.Fatalf("read %q", a.body)
			}
		}},
		{"files/list.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			var l struct {
				Entries []struct{ Name, Path, Type string }
			}
			if err := json.Unmarshal(a.body, &l); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(l.Entries, func(e struct{ Name, Path, Type string }) bool {
				return e.Path == "/home/user/notes" && e.Type == "dir"
			}) {
				t.Fatalf("list: %s", a.body)
			}
		}},
		{"files/upload-url.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			u := a.json(t)
			if url, _ := u["uploadUrl"].(string); !strings.Contains(url, bucket) || u["method"] != "PUT" || u["transferId"] == "" {
				t.Fatalf("upload-url: %s", a.body)
			}
		}},
		{"files/import.json", func(t *testing.T, a answer) { a.problem(t, http.StatusBadRequest) }},
		{"files/download-url.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			d := a.json(t)
			if url, _ := d["downloadUrl"].(string); !strings.Contains(url, bucket) || d["sizeBytes"] != float64(len("hello from an event\n")) {
				t.Fatalf("download-url: %s", a.body)
			}
		}},
		{"files/delete.json", func(t *testing.T, a answer) { a.ok(t, http.StatusNoContent) }},
		{"install/install-injection.json", func(t *testing.T, a answer) { a.problem(t, http.StatusBadRequest) }},
		{"install/install.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if r := a.json(t); r["success"] != false || r["exitCode"] == 0.0 {
				t.Fatalf("install of a missing package: %s", a.body)
			}
		}},
		{"fetch/upload-urls.json", func(t *testing.T, a answer) {
			// The deployed default: cloud metadata and loopback refused,
			// each URL named with why, and nothing fetched.
			a.ok(t, http.StatusOK)
			r := a.json(t)
			errs, _ := r["errors"].([]any)
			if r["status"] != "failure" || len(errs) != 2 || !strings.Contains(fmt.Sprint(errs[0]), "cloud metadata") ||
				!strings.Contains(fmt.Sprint(errs[1]), "loopback") {
				t.Fatalf("upload-urls: %s", a.body)
			}
		}},
		{"status/list-sessions.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			var l struct{ Sessions []struct{ SessionID string } }
			if err := json.Unmarshal(a.body, &l); err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionID != "chat-42" {
				t.Fatalf("list: %s (%v)", a.body, err)
			}
		}},
		{"status/get-run.json", func(t *testing.T, a answer) { a.problem(t, http.StatusNotFound) }},
		{"stop/stop.json", func(t *testing.T, a answer) {
			a.ok(t, http.StatusOK)
			if s := a.json(t); s["state"] != "stopped" {
				t.Fatalf("stop: %s", a.body)
			}
		}},
	}
}

// TestReplayAPIEvents replays every API sample through its own function,
// each function built by lambdaenv from the environment as its main does.
func TestReplayAPIEvents(t *testing.T) {
	s := newLambdaStack(t)
	envs := map[string]*sessionenv.Env{}
	logs := map[string]*syncBuffer{}
	for _, fn := range []lambdaenv.Function{lambdaenv.Start, lambdaenv.Stop, lambdaenv.Status,
		lambdaenv.Execute, lambdaenv.Files, lambdaenv.Install, lambdaenv.Fetch, lambdaenv.MCP} {
		envs[fn.Name], logs[fn.Name] = s.env(fn)
	}
	if n := s.secrets.Count(); n != 8 {
		t.Fatalf("the E2B key secret was read %d times for 8 functions, want once each at init", n)
	}
	for _, r := range apiReplays() {
		if !t.Run(r.file, func(t *testing.T) { r.check(t, invokeAPI(t, envs, r.file, nil)) }) {
			return // later samples build on earlier ones
		}
	}
	t.Run("run request published", func(t *testing.T) {
		reqs := s.events.Entries("Run Requested")
		if len(reqs) != 1 || reqs[0].EventBusName != eventBus || reqs[0].Source != "sessionbox" ||
			!strings.Contains(reqs[0].Detail, `"code":"sum(range(10))"`) {
			t.Fatalf("published %+v", reqs)
		}
	})
	t.Run("logs", func(t *testing.T) {
		all := logs["execute"].String()
		if !strings.Contains(all, `"awsRequestId":"req-execute-execute.json"`) {
			t.Fatalf("execute logs carry no Lambda request id:\n%s", all)
		}
		for fn, l := range logs {
			lambdaenvtest.NoDuplicateKeys(t, l.String())
			for _, secret := range []string{e2bKey, "x = 21", "sum(range(10))", "hello from an event"} {
				if strings.Contains(l.String(), secret) {
					t.Fatalf("%s logs contain %q:\n%s", fn, secret, l.String())
				}
			}
		}
	})
}

// TestReplayAPIForeignTenant checks that an authorizer context for another
// tenant, or none, gets a 401 rather than reaching any session.
func TestReplayAPIForeignTenant(t *testing.T) {
	s := newLambdaStack(t)
	env, _ := s.env(lambdaenv.Status)
	a := invokeAPI(t, map[string]*sessionenv.Env{"status": env}, "status/list-sessions.json", func(ev *events.APIGatewayProxyRequest) {
		ev.RequestContext.Authorizer["tenant"] = "someone-else"
	})
	a.problem(t, http.StatusUnauthorized)
	a = invokeAPI(t, map[string]*sessionenv.Env{"status": env}, "status/list-sessions.json", func(ev *events.APIGatewayProxyRequest) {
		ev.RequestContext.Authorizer = nil
	})
	a.problem(t, http.StatusUnauthorized)
}
