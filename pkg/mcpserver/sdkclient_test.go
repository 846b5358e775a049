package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// bigBackend answers as a sandbox that printed a lot: 300 KB of stdout (the
// service keeps 200 KB of it) with a chart, a 3 MB text file, and a long
// command output; it keeps what the tools save.
type bigBackend struct {
	unbound
	mu    sync.Mutex
	saved map[string][]byte
}

const bigFileBytes = 3 << 20

func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%70))
		b.WriteString("\n")
	}
	return b.String()[:n]
}

func (f *bigBackend) Execute(context.Context, string, session.ExecRequest, func(session.Event)) (*session.ExecResult, error) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nchart"))
	return &session.ExecResult{Success: true, Truncated: true, Stdout: bigText(200 << 10),
		Results: []session.Result{{Text: "<Figure size 640x480 with 1 Axes>", PNG: png}}}, nil
}

func (f *bigBackend) RunCommand(context.Context, string, session.CommandRequest, func(session.Event)) (*session.CommandResult, error) {
	return &session.CommandResult{ExitCode: 0, Stdout: bigText(150 << 10)}, nil
}

// ReadCommand answers a read's worth of output of a command that runs on.
func (f *bigBackend) ReadCommand(_ context.Context, _, id string, _ time.Duration) (*session.CommandOutput, error) {
	return &session.CommandOutput{CommandID: id, Running: true, Stdout: bigText(200 << 10), More: true,
		StdoutPath: session.CommandOutputDir + "/" + id + "/stdout", StderrPath: session.CommandOutputDir + "/" + id + "/stderr"}, nil
}

func (f *bigBackend) OpenFile(context.Context, string, string) (io.ReadCloser, int64, error) {
	return io.NopCloser(strings.NewReader(bigText(bigFileBytes))), bigFileBytes, nil
}

func (f *bigBackend) WriteFile(_ context.Context, _, path string, data []byte) (session.FileEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved[path] = data
	return session.FileEntry{Path: path, Size: int64(len(data))}, nil
}

func connectSDK(t *testing.T, b Backend) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewServer(b, "s1", Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return cs
}

// TestResultsFitAModel: through the official Go SDK client, every result's
// text stays under the cap, says what was cut and where the whole text
// is, carries no second copy as structured content, and captions images.
func TestResultsFitAModel(t *testing.T) {
	t.Parallel()
	b := &bigBackend{saved: map[string][]byte{}}
	cs := connectSDK(t, b)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string // in the text
	}{
		{"execute_python", map[string]any{"code": "print('x' * 300_000)"}, "the whole text is in " + outputDir},
		{"run_command", map[string]any{"cmd": "cat big.log"}, "the whole text is in " + outputDir},
		{"read_file", map[string]any{"path": "big.log"}, "bytes 0 to "},
		{"read_file", map[string]any{"path": "big.log", "offset": 1 << 20, "length": 1000}, "bytes 1048576 to 1049576 of 3145728; read on with offset 1049576]"},
		{"read_command_output", map[string]any{"commandId": "cmd-1"}, "the whole output is in " + session.CommandOutputDir + "/cmd-1/stdout"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		text := textOf(res)
		t.Logf("%s %v: %d bytes of JSON, %d of text", tc.tool, tc.args, len(raw), len(text))
		if res.IsError || len(text) > DefaultMaxTextBytes || !strings.Contains(text, tc.want) {
			t.Errorf("%s: isError %v, %d bytes of text, want at most %d with %q:\n%.300s", tc.tool, res.IsError, len(text), DefaultMaxTextBytes, tc.want, text)
		}
		if sc, _ := json.Marshal(res.StructuredContent); len(sc) > 512 {
			t.Errorf("%s: structured content of %d bytes", tc.tool, len(sc))
		}
		checkCaptions(t, tc.tool, res)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, data := range b.saved {
		if !strings.Contains(string(data), "[stdout]\nline") || len(data) < 150<<10 {
			t.Errorf("%s holds %d bytes, not the whole text", p, len(data))
		}
	}
	// A background command's output is in its own files already.
	if len(b.saved) != 2 {
		t.Errorf("saved %d files, want one per cut result but read_command_output's", len(b.saved))
	}
}

func checkCaptions(t *testing.T, tool string, res *mcp.CallToolResult) {
	t.Helper()
	for i, c := range res.Content {
		if _, ok := c.(*mcp.ImageContent); !ok {
			continue
		}
		if text, ok := res.Content[i-1].(*mcp.TextContent); !ok || !strings.Contains(text.Text, "png") {
			t.Errorf("%s: image %d has no caption", tool, i)
		}
	}
}

// TestSchemasBound: input schemas state the service's limits and plain
// types, the tools with structured results declare them, and the SDK
// refuses arguments out of bounds before a tool runs.
func TestSchemasBound(t *testing.T) {
	t.Parallel()
	cs := connectSDK(t, &bigBackend{saved: map[string][]byte{}})
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		var s jsonschema.Schema
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		for _, name := range s.Required {
			if p := s.Properties[name]; len(p.Types) > 0 {
				t.Errorf("%s.%s is typed %v: a required parameter has one plain type", tool.Name, name, p.Types)
			}
		}
		schemas[tool.Name] = &s
		if hasOut := tool.OutputSchema != nil; hasOut != map[string]bool{"execute_python": true, "run_command": true, "write_file": true, "upload_files_from_urls": true,
			"start_command": true, "read_command_output": true}[tool.Name] {
			t.Errorf("%s: outputSchema %v", tool.Name, tool.OutputSchema)
		}
	}
	prop := func(tool, name string) *jsonschema.Schema { return schemas[tool].Properties[name] }
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"execute_python.timeoutSecs 1..900", *prop("execute_python", "timeoutSecs").Minimum == 1 && *prop("execute_python", "timeoutSecs").Maximum == 900},
		{"run_command.timeoutSecs max 900", *prop("run_command", "timeoutSecs").Maximum == 900},
		{"list_files.depth max 10", *prop("list_files", "depth").Maximum == 10},
		{"install_packages.packages minItems 1", *prop("install_packages", "packages").MinItems == 1},
		{"upload_files_from_urls.urls minItems 1", *prop("upload_files_from_urls", "urls").MinItems == 1},
		{"write_file.encoding enum", len(prop("write_file", "encoding").Enum) == 2},
		{"read_file.length max", *prop("read_file", "length").Maximum == DefaultMaxTextBytes-readHeadRoom},
		{"start_command.timeoutSecs 0..86400", *prop("start_command", "timeoutSecs").Minimum == 0 && *prop("start_command", "timeoutSecs").Maximum == 86400},
		{"read_command_output.waitSecs 1..60", *prop("read_command_output", "waitSecs").Minimum == 1 && *prop("read_command_output", "waitSecs").Maximum == 60},
		{"kill_command.commandId minLength 1", *prop("kill_command", "commandId").MinLength == 1},
	} {
		if !c.ok {
			t.Errorf("schema lacks %s", c.what)
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "1", "timeoutSecs": 5000}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "timeoutSecs") {
		t.Errorf("timeoutSecs 5000: %v %+v", err, res)
	}
}
