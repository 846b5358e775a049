package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/agenttools"
	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpConnect connects the Go SDK's client to the stack's /v1/mcp as the
// holder of key, with query (e.g. "?session=x") appended to the URL.
func mcpConnect(t *testing.T, s *stack, key, query string) *mcp.ClientSession {
	t.Helper()
	return mcpConnectURL(t, s.url+"/v1/mcp"+query, key, s.client.Transport)
}

// mcpConnectURL connects the Go SDK's client to the MCP endpoint at url as
// the holder of key, through rt (nil: the default transport).
func mcpConnectURL(t *testing.T, url, key string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "sessionbox-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{key: key, next: rt}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect MCP client: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and returns its result; a protocol error fails the
// test (a tool's own failure is IsError, which the caller checks).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// toolText is the text blocks of a result, joined.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestMCPEndToEnd(t *testing.T) {
	s := newStack(t)
	t.Run("tools", func(t *testing.T) { mcpTools(t, s) })
	t.Run("binding", func(t *testing.T) { mcpBinding(t, s) })
	t.Run("auth", func(t *testing.T) { mcpAuth(t, s) })
	t.Run("bad requests", func(t *testing.T) { mcpBadRequests(t, s) })
	t.Run("client backend", func(t *testing.T) { mcpClientBackend(t, s) })
	t.Run("background commands", func(t *testing.T) { mcpBackgroundBoth(t, s) })
	t.Run("upload refused", func(t *testing.T) {
		cs := mcpConnect(t, s, s.alice, "?session=mcp-tools")
		res := callTool(t, cs, "upload_files_from_urls", map[string]any{"urls": []string{"http://127.0.0.1:9/x.csv"}})
		if !res.IsError || !strings.Contains(toolText(res), "http://127.0.0.1:9/x.csv") || !strings.Contains(toolText(res), "Fetched 0 of 1") {
			t.Fatalf("loopback URL: isError %v %q", res.IsError, toolText(res))
		}
	})
}

// TestMCPUploadFromURLs fetches files into the sandbox through the tool, on
// a stack that may reach loopback, one URL failing beside one landing.
func TestMCPUploadFromURLs(t *testing.T) {
	s := buildStack(t, 0, session.Config{URLUploads: session.URLUploadConfig{AllowPrivate: true}}, awsParts{})
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/data.csv" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "a,b\n1,2\n")
	}))
	t.Cleanup(files.Close)
	cs := mcpConnect(t, s, s.alice, "?session=mcp-urls")
	res := callTool(t, cs, "upload_files_from_urls", map[string]any{"urls": []string{files.URL + "/data.csv", files.URL + "/gone.csv"}, "destDir": "in"})
	text := toolText(res)
	if res.IsError || !strings.Contains(text, "Fetched 1 of 2") || !strings.Contains(text, "/home/user/in/data.csv") || !strings.Contains(text, files.URL+"/gone.csv: ") {
		t.Fatalf("upload: isError %v %q", res.IsError, text)
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "in/data.csv"}); toolText(res) != "a,b\n1,2\n" {
		t.Fatalf("read back: %q", toolText(res))
	}
}

// mcpClientBackend runs the tools as `sessionbox mcp` does, over pkg/client
// against the API, and checks they share the session the HTTP endpoint
// names.
func mcpClientBackend(t *testing.T, s *stack) {
	ctx := context.Background()
	srv := mcpserver.NewServer(agenttools.ClientBackend{Client: client.New(s.url, s.alice, s.client)}, "mcp-via-client", mcpserver.Options{})
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	if res := callTool(t, cs, "execute_python", map[string]any{"code": "via = 'client'\nprint('ok')"}); res.IsError || !strings.Contains(toolText(res), "ok") {
		t.Fatalf("execute: %q", toolText(res))
	}
	if res := callTool(t, cs, "run_command", map[string]any{"cmd": "echo $((6 * 7))"}); res.IsError || !strings.Contains(toolText(res), "42") {
		t.Fatalf("run_command: %q", toolText(res))
	}
	if res := callTool(t, cs, "write_file", map[string]any{"path": "c/x.txt", "content": "from the client"}); res.IsError {
		t.Fatalf("write: %q", toolText(res))
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "/home/user/c/x.txt"}); res.IsError || toolText(res) != "from the client" {
		t.Fatalf("read: %q", toolText(res))
	}
	if res := callTool(t, cs, "list_files", map[string]any{"path": "c", "depth": 1}); res.IsError || !strings.Contains(toolText(res), "/home/user/c/x.txt") {
		t.Fatalf("list: %q", toolText(res))
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "c/none.txt"}); !res.IsError || !strings.Contains(toolText(res), "list_files") {
		t.Fatalf("missing file: %q", toolText(res))
	}
	if res := callTool(t, cs, "install_packages", map[string]any{"packages": []string{"bad spec!"}}); !res.IsError || !strings.Contains(toolText(res), "bad spec!") {
		t.Fatalf("bad package: %q", toolText(res))
	}
	// The HTTP endpoint naming the same session sees the same kernel.
	web := mcpConnect(t, s, s.alice, "?session=mcp-via-client")
	if res := callTool(t, web, "execute_python", map[string]any{"code": "via"}); res.IsError || !strings.Contains(toolText(res), "client") {
		t.Fatalf("HTTP client does not see the stdio client's variable: %q", toolText(res))
	}
	if res := callTool(t, cs, "reset_kernel", nil); res.IsError {
		t.Fatalf("reset: %q", toolText(res))
	}
	if res := callTool(t, web, "execute_python", map[string]any{"code": "via"}); !res.IsError {
		t.Fatalf("variable survived reset: %q", toolText(res))
	}
}

// mcpTools drives every tool through the official Go client, as an agent
// would, on one session of its own.
func mcpTools(t *testing.T, s *stack) {
	cs := mcpConnect(t, s, s.alice, "?session=mcp-tools")
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or an input schema", tool.Name)
		}
	}
	want := "execute_python install_packages list_files read_file write_file delete_file upload_files_from_urls run_command " +
		"start_command read_command_output kill_command reset_kernel"
	if got := strings.Join(names, " "); !sameWords(got, want) {
		t.Fatalf("tools %q, want %q", got, want)
	}

	res := callTool(t, cs, "execute_python", map[string]any{"code": "x = 20 + 1\nprint('hello')\nx * 2"})
	if res.IsError || !strings.Contains(toolText(res), "hello") || !strings.Contains(toolText(res), "42") {
		t.Fatalf("first execute: %+v %q", res, toolText(res))
	}
	var sc struct {
		Success bool    `json:"success"`
		Stdout  *string `json:"stdout"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sc); err != nil || !sc.Success || sc.Stdout != nil {
		t.Fatalf("structured content %s", raw)
	}
	if res := callTool(t, cs, "execute_python", map[string]any{"code": "x + 1"}); res.IsError || !strings.Contains(toolText(res), "22") {
		t.Fatalf("second execute does not see x: %q", toolText(res))
	}

	res = callTool(t, cs, "execute_python", map[string]any{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"})
	var png []byte
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" {
			png = img.Data
		}
	}
	if res.IsError || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("chart: no PNG image block in %q (isError %v, %d blocks)", toolText(res), res.IsError, len(res.Content))
	}

	res = callTool(t, cs, "execute_python", map[string]any{"code": "1 / 0"})
	if !res.IsError || !strings.Contains(toolText(res), "ZeroDivisionError") {
		t.Fatalf("exception: isError %v, text %q", res.IsError, toolText(res))
	}

	res = callTool(t, cs, "execute_python", map[string]any{"code": "import time\ntime.sleep(30)", "timeoutSecs": 1})
	if !res.IsError || !strings.Contains(toolText(res), "did not finish within its time limit") {
		t.Fatalf("timeout: isError %v, text %q", res.IsError, toolText(res))
	}

	mcpCommand(t, cs)
	mcpArtifact(t, s, cs)
	mcpFiles(t, cs)
	mcpBounded(t, cs)
	mcpInstall(t, cs)

	res = callTool(t, cs, "reset_kernel", nil)
	if res.IsError {
		t.Fatalf("reset: %q", toolText(res))
	}
	if res := callTool(t, cs, "execute_python", map[string]any{"code": "x"}); !res.IsError || !strings.Contains(toolText(res), "NameError") {
		t.Fatalf("x after reset: %q", toolText(res))
	}
}

// mcpCommand: run_command answers exit code, stdout and stderr in words
// and as structured content; a non-zero exit is a result, a timeout an
// error result with the output before it.
func mcpCommand(t *testing.T, cs *mcp.ClientSession) {
	res := callTool(t, cs, "run_command", map[string]any{"cmd": "mkdir -p sh && cd sh && pwd && echo oops >&2 && exit 5"})
	text := toolText(res)
	if res.IsError || !strings.Contains(text, "exit code 5") || !strings.Contains(text, "[stdout]\n/home/user/sh") || !strings.Contains(text, "[stderr]\noops") {
		t.Fatalf("run_command: isError %v, text %q", res.IsError, text)
	}
	var sc struct {
		ExitCode int     `json:"exitCode"`
		Stdout   *string `json:"stdout"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &sc); err != nil || sc.ExitCode != 5 || sc.Stdout != nil {
		t.Fatalf("run_command structured content %s", raw)
	}
	if res := callTool(t, cs, "run_command", map[string]any{"cmd": "pwd", "cwd": "sh"}); res.IsError || !strings.Contains(toolText(res), "/home/user/sh") {
		t.Fatalf("run_command cwd: %q", toolText(res))
	}
	res = callTool(t, cs, "run_command", map[string]any{"cmd": "echo started; sleep 30", "timeoutSecs": 1})
	if text := toolText(res); !res.IsError || !strings.Contains(text, "did not finish within its time limit") || !strings.Contains(text, "started") {
		t.Fatalf("run_command timeout: isError %v, text %q", res.IsError, text)
	}
	if res := callTool(t, cs, "run_command", map[string]any{"cmd": ""}); !res.IsError || !strings.Contains(toolText(res), "cmd is empty") {
		t.Fatalf("run_command empty: %q", toolText(res))
	}
}

// mcpArtifact: a file the code writes comes back as a resource link whose
// URL downloads it.
func mcpArtifact(t *testing.T, s *stack, cs *mcp.ClientSession) {
	res := callTool(t, cs, "execute_python", map[string]any{"code": "open('report.csv', 'w').write('q,v\\n1,2\\n')"})
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && l.Name == "report.csv" {
			link = l
		}
	}
	if res.IsError || link == nil || link.Size == nil || *link.Size != 8 {
		t.Fatalf("no resource link for report.csv: %+v", res.Content)
	}
	resp, err := s.client.Get(link.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "q,v\n1,2\n" {
		t.Fatalf("download %s: %d %q", link.URI, resp.StatusCode, body)
	}
}

// mcpFiles writes, lists and reads back a text and a binary file.
func mcpFiles(t *testing.T, cs *mcp.ClientSession) {
	if res := callTool(t, cs, "write_file", map[string]any{"path": "notes/a.txt", "content": "héllo\nworld\n"}); res.IsError {
		t.Fatalf("write text: %q", toolText(res))
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe, 'x'}
	if res := callTool(t, cs, "write_file", map[string]any{"path": "/home/user/notes/b.bin",
		"content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}); res.IsError {
		t.Fatalf("write binary: %q", toolText(res))
	}
	res := callTool(t, cs, "list_files", map[string]any{"path": "notes"})
	if text := toolText(res); res.IsError || !strings.Contains(text, "/home/user/notes/a.txt") || !strings.Contains(text, "/home/user/notes/b.bin") {
		t.Fatalf("list: %q", text)
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "notes/a.txt"}); res.IsError || toolText(res) != "héllo\nworld\n" {
		t.Fatalf("read text: %q", toolText(res))
	}
	res = callTool(t, cs, "read_file", map[string]any{"path": "notes/b.bin"})
	var got []byte
	for _, c := range res.Content {
		if r, ok := c.(*mcp.EmbeddedResource); ok && r.Resource != nil {
			got = r.Resource.Blob
		}
	}
	if res.IsError || !bytes.Equal(got, bin) {
		t.Fatalf("read binary: %v, want %v (%q)", got, bin, toolText(res))
	}
	if res := callTool(t, cs, "write_file", map[string]any{"path": "c.txt", "content": "x", "encoding": "latin-1"}); !res.IsError || !strings.Contains(toolText(res), "latin-1") {
		t.Fatalf("bad encoding: isError %v %q", res.IsError, toolText(res))
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "notes/missing.txt"}); !res.IsError || toolText(res) == "" {
		t.Fatalf("missing file: isError %v %q", res.IsError, toolText(res))
	}
	if res := callTool(t, cs, "delete_file", map[string]any{"path": "notes/a.txt"}); res.IsError {
		t.Fatalf("delete: %q", toolText(res))
	}
	if res := callTool(t, cs, "read_file", map[string]any{"path": "notes/a.txt"}); !res.IsError {
		t.Fatalf("deleted file still read: %q", toolText(res))
	}
}

// mcpBounded: a 300 KB print (which the service cuts to 200 KB) comes back
// as its head and tail under the text cap, naming a file in the sandbox
// with the whole output, which read_file then reads in parts.
func mcpBounded(t *testing.T, cs *mcp.ClientSession) {
	res := callTool(t, cs, "execute_python", map[string]any{"code": "print('\\n'.join(f'line {i:06d}' for i in range(25_000)))"})
	text := toolText(res)
	i := strings.Index(text, "the whole text is in ")
	if res.IsError || len(text) > mcpserver.DefaultMaxTextBytes || i < 0 || !strings.Contains(text, "line 000000") {
		t.Fatalf("300 KB print: isError %v, %d bytes of text: %.400s", res.IsError, len(text), text)
	}
	saved := strings.Fields(text[i+len("the whole text is in "):])[0]
	res = callTool(t, cs, "read_file", map[string]any{"path": saved, "offset": 100_000, "length": 1000})
	if text := toolText(res); res.IsError || !strings.Contains(text, "read on with offset 101000") || !strings.Contains(text, "line 0") {
		t.Fatalf("read of the saved output %s: %q", saved, text)
	}
}

// mcpInstall installs a wheel built here from an index the sandbox serves
// itself (sandboxes are offline), then imports it in a fresh kernel.
func mcpInstall(t *testing.T, cs *mcp.ClientSession) {
	name, wheel := buildWheel(t, "mcpdemo", "1.0", "via-mcp")
	if res := callTool(t, cs, "write_file", map[string]any{"path": "index/mcpdemo/" + name,
		"content": base64.StdEncoding.EncodeToString(wheel), "encoding": "base64"}); res.IsError {
		t.Fatalf("write wheel: %q", toolText(res))
	}
	page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>`, name, name)
	if res := callTool(t, cs, "write_file", map[string]any{"path": "index/mcpdemo/index.html", "content": page}); res.IsError {
		t.Fatalf("write index: %q", toolText(res))
	}
	res := callTool(t, cs, "execute_python", map[string]any{"code": "import subprocess, socket, sys, time\n" +
		"srv = subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', '/home/user/index', '8766']," +
		" stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
		"for _ in range(100):\n    try:\n        socket.create_connection(('127.0.0.1', 8766), 0.2).close(); break\n" +
		"    except OSError: time.sleep(0.05)\n'up'"})
	if res.IsError || !strings.Contains(toolText(res), "up") {
		t.Fatalf("index server: %q", toolText(res))
	}
	res = callTool(t, cs, "install_packages", map[string]any{"packages": []string{"mcpdemo==1.0"}, "indexUrl": "http://127.0.0.1:8766/"})
	if res.IsError || !strings.Contains(toolText(res), "Installed mcpdemo==1.0") {
		t.Fatalf("install: %q", toolText(res))
	}
	callTool(t, cs, "execute_python", map[string]any{"code": "srv.kill(); srv.wait()"})
	res = callTool(t, cs, "install_packages", map[string]any{"packages": []string{"--index-url=http://evil"}})
	if !res.IsError || !strings.Contains(toolText(res), "--index-url") {
		t.Fatalf("option as a package: isError %v %q", res.IsError, toolText(res))
	}
	callTool(t, cs, "reset_kernel", nil)
	if res := callTool(t, cs, "execute_python", map[string]any{"code": "import mcpdemo; mcpdemo.VALUE"}); res.IsError || !strings.Contains(toolText(res), "via-mcp") {
		t.Fatalf("import installed package: %q", toolText(res))
	}
}

// mcpBinding: clients naming one session share its kernel; unnamed clients
// each get a session of their own.
func mcpBinding(t *testing.T, s *stack) {
	a := mcpConnect(t, s, s.alice, "?session=mcp-shared")
	b := mcpConnect(t, s, s.alice, "?session=mcp-shared")
	if res := callTool(t, a, "execute_python", map[string]any{"code": "shared = 'from-a'"}); res.IsError {
		t.Fatalf("set in a: %q", toolText(res))
	}
	if res := callTool(t, b, "execute_python", map[string]any{"code": "shared"}); res.IsError || !strings.Contains(toolText(res), "from-a") {
		t.Fatalf("b does not see a's variable: %q", toolText(res))
	}

	c := mcpConnect(t, s, s.alice, "")
	d := mcpConnect(t, s, s.alice, "")
	if c.ID() == "" || c.ID() == d.ID() {
		t.Fatalf("unnamed MCP session ids %q and %q", c.ID(), d.ID())
	}
	if res := callTool(t, c, "execute_python", map[string]any{"code": "mine = 1\nmine"}); res.IsError {
		t.Fatalf("set in c: %q", toolText(res))
	}
	if res := callTool(t, c, "execute_python", map[string]any{"code": "mine + 1"}); res.IsError || !strings.Contains(toolText(res), "2") {
		t.Fatalf("c does not keep its own variable: %q", toolText(res))
	}
	if res := callTool(t, d, "execute_python", map[string]any{"code": "mine"}); !res.IsError || !strings.Contains(toolText(res), "NameError") {
		t.Fatalf("d sees c's variable: %q", toolText(res))
	}
	// The sandbox bound to an unnamed MCP session is the session named
	// for its id, visible through the REST API; closing the MCP session
	// leaves it running.
	_ = c.Close()
	var st struct {
		State string `json:"state"`
	}
	s.json(s.alice, "GET", "/v1/sessions/"+c.ID()+"/sandbox", nil, &st)
	if st.State != "running" {
		t.Fatalf("session of a closed MCP session is %q, want running", st.State)
	}
}

// mcpAuth: no key is 401; another principal naming the same session
// reaches a session of its own.
func mcpAuth(t *testing.T, s *stack) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, body := s.req("", "POST", "/v1/mcp", strings.NewReader(init), "Accept", "application/json, text/event-stream")
	s.problem(401, resp, body)

	bob := mcpConnect(t, s, s.bob, "?session=mcp-shared")
	if res := callTool(t, bob, "execute_python", map[string]any{"code": "shared"}); !res.IsError || !strings.Contains(toolText(res), "NameError") {
		t.Fatalf("bob reaches alice's session: %q", toolText(res))
	}
}

// mcpBadRequests: what is not an MCP request gets a problem naming why.
func mcpBadRequests(t *testing.T, s *stack) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	both := "application/json, text/event-stream"
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
		status  int
		detail  string
	}{
		{"wrong content type", "POST", "/v1/mcp", []string{"Accept", both, "Content-Type", "text/plain"}, 415, "application/json"},
		{"no event stream accepted", "POST", "/v1/mcp", []string{"Accept", "application/json"}, 406, "text/event-stream"},
		{"bad session name", "POST", "/v1/mcp?session=a/b", []string{"Accept", both}, 400, "query parameter session"},
		{"bad session header", "POST", "/v1/mcp", []string{"Accept", both, "Mcp-Session-Id", "no spaces allowed"}, 400, "Mcp-Session-Id"},
		{"GET stream", "GET", "/v1/mcp", []string{"Accept", "text/event-stream"}, 405, "POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.method == "POST" {
				body = strings.NewReader(init)
			}
			var resp *http.Response
			var b []byte
			if body != nil {
				resp, b = s.req(s.alice, tc.method, tc.path, body, tc.headers...)
			} else {
				resp, b = s.req(s.alice, tc.method, tc.path, nil, tc.headers...)
			}
			p := s.problem(tc.status, resp, b)
			if d, _ := p["detail"].(string); !strings.Contains(d, tc.detail) {
				t.Fatalf("detail %q does not name %q", d, tc.detail)
			}
		})
	}
}

func sameWords(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	seen := map[string]int{}
	for _, w := range fa {
		seen[w]++
	}
	for _, w := range fb {
		if seen[w]--; seen[w] < 0 {
			return false
		}
	}
	return true
}

// mcpBackgroundBoth runs the background command tools over HTTP (the
// Manager in process) and as `sessionbox mcp` does (pkg/client).
func mcpBackgroundBoth(t *testing.T, s *stack) {
	t.Run("http", func(t *testing.T) { mcpBackground(t, mcpConnect(t, s, s.alice, "?session=mcp-bg")) })
	t.Run("client", func(t *testing.T) {
		ctx := context.Background()
		srv := mcpserver.NewServer(agenttools.ClientBackend{Client: client.New(s.url, s.alice, s.client)}, "mcp-bg-client", mcpserver.Options{})
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, serverT, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, clientT, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		mcpBackground(t, cs)
	})
}

// bgRead is read_command_output's structured result.
type bgRead struct {
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exitCode"`
	Truncated  bool   `json:"truncated"`
	StdoutPath string `json:"stdoutPath"`
}

// startBackground starts cmd with start_command and returns its id.
func startBackground(t *testing.T, cs *mcp.ClientSession, cmd string) string {
	t.Helper()
	res := callTool(t, cs, "start_command", map[string]any{"cmd": cmd})
	var started struct {
		CommandID string `json:"commandId"`
		PID       int    `json:"pid"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &started); err != nil || res.IsError || started.CommandID == "" || started.PID == 0 {
		t.Fatalf("start_command: %q %s", toolText(res), raw)
	}
	return started.CommandID
}

// readBackground makes one read_command_output call.
func readBackground(t *testing.T, cs *mcp.ClientSession, id string, wait int) (string, bgRead) {
	t.Helper()
	res := callTool(t, cs, "read_command_output", map[string]any{"commandId": id, "waitSecs": wait})
	var r bgRead
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &r); err != nil || res.IsError {
		t.Fatalf("read_command_output: %q %s", toolText(res), raw)
	}
	return toolText(res), r
}

// mcpBackground: a background command's output comes in reads, each line
// exactly once and in order however short the reads' waits, then its end
// with the exit code; what it printed before the first read is there; a
// huge output is bounded and names its file; kill ends one; unknown ids
// are error results.
func mcpBackground(t *testing.T, cs *mcp.ClientSession) {
	// A line every 70 ms, read in waits of 1 s: each wait ends while the
	// command prints.
	id := startBackground(t, cs, "echo early; for i in $(seq 1 60); do echo line$i; sleep 0.07; done; echo finished >&2; exit 3")
	var all strings.Builder
	var end bgRead
	reads := 0
	for ; reads < 60; reads++ {
		var text string
		text, end = readBackground(t, cs, id, 1)
		all.WriteString(text + "\n")
		if !end.Running {
			break
		}
		if !strings.Contains(text, "is still running") {
			t.Fatalf("a read of a running command says %q", text)
		}
	}
	text := all.String()
	if reads < 2 || end.Running || end.ExitCode == nil || *end.ExitCode != 3 || !strings.Contains(text, "exit code 3") || !strings.Contains(text, "[stderr]\nfinished") {
		t.Fatalf("%d reads of a background command: end %+v, text %q", reads+1, end, text)
	}
	var got []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "line") || l == "early" {
			got = append(got, l)
		}
	}
	want := []string{"early"}
	for i := 1; i <= 60; i++ {
		want = append(want, fmt.Sprintf("line%d", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("over %d reads the lines came as %q; want each exactly once, in order", reads+1, got)
	}
	if text, r := readBackground(t, cs, id, 1); r.Running || !strings.Contains(text, "(no new output)") {
		t.Fatalf("a read after the end: %q %+v", text, r)
	}

	// Printed before the first read, and ended: all there, with the end.
	id = startBackground(t, cs, "echo before-any-read; echo oops >&2; exit 4")
	if text, r := readBackground(t, cs, id, 30); r.Running || r.ExitCode == nil || *r.ExitCode != 4 ||
		!strings.Contains(text, "[stdout]\nbefore-any-read\n[stderr]\noops") {
		t.Fatalf("first read of an ended command: %q %+v", text, r)
	}

	// Huge: bounded, naming the file that holds it all.
	id = startBackground(t, cs, "head -c 300000 /dev/zero | tr '\\0' x; echo")
	text, r := readBackground(t, cs, id, 30)
	if len(text) > mcpserver.DefaultMaxTextBytes || r.StdoutPath == "" || !strings.Contains(text, "the whole output is in "+r.StdoutPath) {
		t.Fatalf("a huge read: %d bytes, %+v, %.400q", len(text), r, text)
	}
	res := callTool(t, cs, "read_file", map[string]any{"path": r.StdoutPath, "offset": 299990, "length": 20})
	if res.IsError || !strings.Contains(toolText(res), "xxxxxxxxxx\n") {
		t.Fatalf("read_file of the named output: %q", toolText(res))
	}

	id = startBackground(t, cs, "sleep 300")
	if res := callTool(t, cs, "kill_command", map[string]any{"commandId": id}); res.IsError {
		t.Fatalf("kill_command: %q", toolText(res))
	}
	res = callTool(t, cs, "read_command_output", map[string]any{"commandId": id, "waitSecs": 5})
	if res.IsError || !strings.Contains(toolText(res), "has ended: a signal ended it") {
		t.Fatalf("read after kill: %q", toolText(res))
	}
	for _, tool := range []string{"read_command_output", "kill_command"} {
		if res := callTool(t, cs, tool, map[string]any{"commandId": "cmd-nope"}); !res.IsError || !strings.Contains(toolText(res), "cmd-nope") {
			t.Errorf("%s of an unknown id: isError %v %q", tool, res.IsError, toolText(res))
		}
	}
	if res := callTool(t, cs, "read_command_output", map[string]any{"commandId": id, "waitSecs": 61}); !res.IsError || !strings.Contains(toolText(res), "waitSecs") {
		t.Errorf("waitSecs 61: %q", toolText(res))
	}
}
