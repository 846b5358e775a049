// Package mcpserver is sessionbox's Model Context Protocol server: the tools
// an agent uses on one sessionbox session (execute_python, install_packages,
// list_files, read_file, write_file, delete_file, upload_files_from_urls,
// run_command, start_command, read_command_output, kill_command,
// reset_kernel), with bounded schemas and results written for
// a model: text at most Options.MaxTextBytes (the whole text saved in the
// sandbox), images captioned, structured content small. The tools run over
// a Backend, which the API serves from the Manager in process (streamable
// HTTP at /v1/mcp) and `sessionbox mcp` from a client of a running API
// (stdio, agenttools.ClientBackend).
package mcpserver

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// Options tune the server. Zero fields take the defaults documented on each.
type Options struct {
	// Version is the server version announced to clients.
	Version string
	// MaxOutputBytes is the service's cap on stdout and stderr each,
	// named when a result says its output was cut (default 200 KB).
	MaxOutputBytes int
	// MaxTextBytes caps the text of one result (default
	// DefaultMaxTextBytes): a longer one keeps its head and tail, and the
	// whole text is saved in the sandbox for the model to read in parts.
	MaxTextBytes int
	// MaxReadBytes caps an image read_file returns whole (default 1 MB).
	MaxReadBytes int64
	// Logger takes failures a model is not told about in detail.
	Logger *slog.Logger
	// MaxRequestBytes bounds one message over HTTP (default 8 MiB): a
	// write_file of a whole inline file arrives base64-encoded in JSON.
	MaxRequestBytes int64
	// SchemaCache keeps the tools' schemas across servers, since the HTTP
	// handler builds one server per request.
	SchemaCache *mcp.SchemaCache
}

// DefaultMaxRequestBytes is Options.MaxRequestBytes' default.
const DefaultMaxRequestBytes = 8 << 20

const (
	defaultMaxOutputBytes = 200 << 10
	defaultMaxReadBytes   = 1 << 20
)

func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = defaultMaxOutputBytes
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = defaultMaxReadBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// tools runs every tool of one server; bind says, per call, which backend
// and session it acts on, and gives the call's context (which the caller
// must cancel when the call ends).
type tools struct {
	bind func(ctx context.Context) (context.Context, context.CancelFunc, Backend, string)
	opts Options
}

// NewServer returns an MCP server whose tools act on the sessionbox session
// sessionID through b.
func NewServer(b Backend, sessionID string, opts Options) *mcp.Server {
	return newServer(func(ctx context.Context) (context.Context, context.CancelFunc, Backend, string) {
		return ctx, func() {}, b, sessionID
	}, opts)
}

func newServer(bind func(ctx context.Context) (context.Context, context.CancelFunc, Backend, string), opts Options) *mcp.Server {
	opts = opts.withDefaults()
	s := mcp.NewServer(&mcp.Implementation{Name: "sessionbox", Title: "sessionbox", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions: "Tools of one sessionbox session: a sandboxed, stateful Python interpreter " +
				"with files under /home/user and pip. Variables persist between execute_python calls.",
			SchemaCache: opts.SchemaCache,
		})
	t := &tools{bind: bind, opts: opts}
	t.register(s)
	return s
}

func (t *tools) register(s *mcp.Server) {
	in := inputSchemas()
	mcp.AddTool(s, &mcp.Tool{
		Name:        "execute_python",
		InputSchema: in["execute_python"],
		Title:       "Run Python",
		Description: executeDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.executePython)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "install_packages",
		InputSchema: in["install_packages"],
		Title:       "Install Python packages",
		Description: installDescription,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false)},
	}, t.installPackages)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_files",
		InputSchema: in["list_files"],
		Title:       "List files",
		Description: listDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, t.listFiles)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_file",
		InputSchema: in["read_file"],
		Title:       "Read a file",
		Description: readDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, t.readFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_file",
		InputSchema: in["write_file"],
		Title:       "Write a file",
		Description: writeDescription,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, t.writeFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "upload_files_from_urls",
		InputSchema: in["upload_files_from_urls"],
		Title:       "Fetch files from URLs",
		Description: uploadURLsDescription,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, t.uploadFromURLs)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run_command",
		InputSchema: in["run_command"],
		Title:       "Run a shell command",
		Description: runCommandDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.runCommand)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_file",
		InputSchema: in["delete_file"],
		Title:       "Delete a file",
		Description: deleteDescription,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, t.deleteFile)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "reset_kernel",
		Title:       "Restart the Python kernel",
		Description: resetDescription,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, t.resetKernel)
	t.registerBackground(s, in)
}

const (
	executeDescription = "Run Python code in this session's sandboxed Jupyter-style kernel and return its output. " +
		"State persists between calls: variables, imports and functions defined earlier are still there. " +
		"The value of the last expression is returned, as in a notebook cell; print() output comes back as stdout. " +
		"Charts shown with matplotlib (plt.show()) come back as images. Files live under /home/user " +
		"(the working directory); files the code creates there come back as links. " +
		"No network access may be available: install packages with install_packages, not pip in code."
	installDescription = "Install Python packages with pip into this session's sandbox. " +
		"Give names with optional version specifiers, e.g. [\"pandas\", \"requests>=2.31\"]; no options, URLs or paths. " +
		"indexUrl replaces PyPI with another package index. Already-imported modules are not reloaded: " +
		"if a fresh install cannot be imported, call reset_kernel and import it again."
	listDescription = "List files and directories in this session's sandbox. path defaults to /home/user " +
		"(relative paths are under /home/user); depth is how many levels to descend (default 1)."
	readDescription = "Read a file from this session's sandbox. Text comes back as text, at most length bytes from offset " +
		"(default: the first 24 KB); the result says the file's size and the offset to read on from. " +
		"PNG/JPEG/GIF/WebP images come back as images, small other binary files as a base64 resource with their MIME type."
	deleteDescription = "Delete a file, or a directory with everything in it, from this session's sandbox. " +
		"/home/user itself cannot be deleted."
	writeDescription = "Write a file in this session's sandbox, creating parent directories and replacing an existing file. " +
		"content is the file's text, or its bytes in base64 when encoding is \"base64\"."
	uploadURLsDescription = "Download files from http(s) URLs into this session's sandbox, fetched by sessionbox itself " +
		"(use it when code in the sandbox has no network). Files go to destDir (default /home/user), named as the server " +
		"names them or after the URL's last path segment. One URL failing does not fail the others: the result lists what " +
		"landed where and why any URL was refused. Private and loopback addresses are refused."
	runCommandDescription = "Run a shell command line (bash) in this session's sandbox and return its exit code, stdout and stderr. " +
		"It shares the files under /home/user (the default working directory) with execute_python, but not its variables. " +
		"A non-zero exit code is reported, not an error. A command still running after timeoutSecs is killed, and what it printed until then is returned. " +
		"Use it for shell tools (ls, grep, git, unzip, ...); use install_packages for Python packages."
	resetDescription = "Restart this session's Python kernel: every variable, import and definition is gone, files are kept. " +
		"Use it when the kernel is stuck or state must be clean, or to import a package installed after its first import attempt."
)

// ExecuteInput is execute_python's input.
type ExecuteInput struct {
	Code        string `json:"code" jsonschema:"the Python code to run; the last expression's value is returned"`
	TimeoutSecs int    `json:"timeoutSecs,omitempty" jsonschema:"seconds the code may run before it is interrupted (default 300)"`
}

// InstallInput is install_packages' input.
type InstallInput struct {
	Packages []string `json:"packages" jsonschema:"package names with optional extras and version specifiers, e.g. pandas==2.2.2"`
	IndexURL string   `json:"indexUrl,omitempty" jsonschema:"an http(s) URL of a package index to use instead of PyPI"`
}

// ListInput is list_files' input.
type ListInput struct {
	Path  string `json:"path,omitempty" jsonschema:"directory to list; default /home/user"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels to descend (default 1)"`
}

// ReadInput is read_file's input.
type ReadInput struct {
	Path   string `json:"path" jsonschema:"file to read, absolute or relative to /home/user"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset to start reading at (default 0)"`
	Length int    `json:"length,omitempty" jsonschema:"bytes of text to read (default and at most 24320)"`
}

// DeleteInput is delete_file's input.
type DeleteInput struct {
	Path string `json:"path" jsonschema:"file or directory to delete, absolute or relative to /home/user"`
}

// WriteInput is write_file's input.
type WriteInput struct {
	Path     string `json:"path" jsonschema:"file to write, absolute or relative to /home/user"`
	Content  string `json:"content" jsonschema:"the file's content: text, or base64 when encoding is base64"`
	Encoding string `json:"encoding,omitempty" jsonschema:"how content is encoded: utf-8 text (default) or base64 bytes"`
}

// UploadURLsInput is upload_files_from_urls' input.
type UploadURLsInput struct {
	URLs    []string `json:"urls" jsonschema:"http(s) URLs of the files to fetch"`
	DestDir string   `json:"destDir,omitempty" jsonschema:"directory to put the files in; default /home/user"`
}

// CommandInput is run_command's input.
type CommandInput struct {
	Cmd         string `json:"cmd" jsonschema:"the shell command line, run by bash -l -c"`
	Cwd         string `json:"cwd,omitempty" jsonschema:"working directory, absolute or relative to /home/user (default /home/user)"`
	TimeoutSecs int    `json:"timeoutSecs,omitempty" jsonschema:"seconds the command may run before it is killed (default 300)"`
}

// ResetInput is reset_kernel's input: nothing.
type ResetInput struct{}

func (t *tools) executePython(ctx context.Context, req *mcp.CallToolRequest, in ExecuteInput) (*mcp.CallToolResult, *ExecOutput, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	res, err := b.Execute(ctx, sid, session.ExecRequest{Code: in.Code, TimeoutSecs: in.TimeoutSecs}, progressOf(ctx, req))
	if err != nil {
		return t.failure(ctx, "execute_python", sid, err), nil, nil
	}
	out := execResult(res, t.opts.MaxOutputBytes)
	bound(ctx, out, t.opts.MaxTextBytes, saver(b, sid, "execute_python"))
	return out, execOutput(res, out), nil
}

func (t *tools) installPackages(ctx context.Context, _ *mcp.CallToolRequest, in InstallInput) (*mcp.CallToolResult, any, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	res, err := b.Install(ctx, sid, session.InstallRequest{Packages: in.Packages, IndexURL: in.IndexURL})
	if err != nil {
		return t.failure(ctx, "install_packages", sid, err), nil, nil
	}
	out := installResult(in.Packages, res)
	bound(ctx, out, t.opts.MaxTextBytes, saver(b, sid, "install_packages"))
	return out, nil, nil
}

func (t *tools) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, any, error) {
	dir := in.Path
	if dir == "" {
		dir = session.WorkDir
	}
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	entries, err := b.ListFiles(ctx, sid, dir, in.Depth)
	if err != nil {
		return t.failure(ctx, "list_files", sid, err), nil, nil
	}
	out := listResult(dir, entries)
	bound(ctx, out, t.opts.MaxTextBytes, saver(b, sid, "list_files"))
	return out, nil, nil
}

func (t *tools) readFile(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, any, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	body, size, err := b.OpenFile(ctx, sid, in.Path)
	if err != nil {
		return t.failure(ctx, "read_file", sid, err), nil, nil
	}
	defer body.Close()
	w := t.window(in)
	if isModelImage(mimeOf(in.Path, nil)) && in.Offset == 0 {
		// An image is shown whole or not at all.
		w.length = t.opts.MaxReadBytes
	}
	data, more, err := readWindow(body, w)
	if err != nil {
		return t.failure(ctx, "read_file", sid, err), nil, nil
	}
	return fileResult(in.Path, data, fileSpan{offset: w.offset, size: size, more: more}), nil, nil
}

// readHeadRoom is kept in a result's text for the line saying which bytes
// of the file it shows.
const readHeadRoom = 256

// window is the part of a file read_file reads: from offset, at most
// length bytes, never more than a result's text may hold.
func (t *tools) window(in ReadInput) readSpan {
	n := int64(in.Length)
	if most := int64(t.opts.MaxTextBytes - readHeadRoom); n <= 0 || n > most {
		n = most
	}
	return readSpan{offset: max(in.Offset, 0), length: n}
}

func (t *tools) writeFile(ctx context.Context, _ *mcp.CallToolRequest, in WriteInput) (*mcp.CallToolResult, *WriteOutput, error) {
	data, bad := decodeContent(in.Content, in.Encoding)
	if bad != "" {
		return refused(bad), nil, nil
	}
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	entry, err := b.WriteFile(ctx, sid, in.Path, data)
	if err != nil {
		return t.failure(ctx, "write_file", sid, err), nil, nil
	}
	return writeResult(entry), &WriteOutput{Path: entry.Path, Size: entry.Size}, nil
}

func (t *tools) uploadFromURLs(ctx context.Context, _ *mcp.CallToolRequest, in UploadURLsInput) (*mcp.CallToolResult, *UploadURLsOutput, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	res, err := b.UploadURLs(ctx, sid, in.URLs, in.DestDir)
	if err != nil {
		return t.failure(ctx, "upload_files_from_urls", sid, err), nil, nil
	}
	out := uploadURLsResult(res)
	bound(ctx, out, t.opts.MaxTextBytes, saver(b, sid, "upload_files_from_urls"))
	return out, uploadURLsOutput(res), nil
}

func (t *tools) runCommand(ctx context.Context, req *mcp.CallToolRequest, in CommandInput) (*mcp.CallToolResult, *CommandOutput, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	res, err := b.RunCommand(ctx, sid, session.CommandRequest{Cmd: in.Cmd, Cwd: in.Cwd, TimeoutSecs: in.TimeoutSecs}, progressOf(ctx, req))
	if err != nil {
		return t.failure(ctx, "run_command", sid, err), nil, nil
	}
	out := commandResult(res, t.opts.MaxOutputBytes)
	bound(ctx, out, t.opts.MaxTextBytes, saver(b, sid, "run_command"))
	return out, commandOutput(res), nil
}

func (t *tools) deleteFile(ctx context.Context, _ *mcp.CallToolRequest, in DeleteInput) (*mcp.CallToolResult, any, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	if err := b.DeleteFile(ctx, sid, in.Path); err != nil {
		return t.failure(ctx, "delete_file", sid, err), nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Deleted " + absPath(in.Path) + "."}}}, nil, nil
}

func (t *tools) resetKernel(ctx context.Context, _ *mcp.CallToolRequest, _ ResetInput) (*mcp.CallToolResult, any, error) {
	ctx, done, b, sid := t.bind(ctx)
	defer done()
	if err := b.Reset(ctx, sid); err != nil {
		return t.failure(ctx, "reset_kernel", sid, err), nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: "The Python kernel was restarted: variables, imports and definitions are gone; files are kept.",
	}}}, nil, nil
}

func ptr[T any](v T) *T { return &v }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// maxProgressMessage bounds one progress message: it is a glimpse of the
// output while it runs; the result has all of it.
const maxProgressMessage = 1000

// progressOf sends an execution's output as progress notifications when
// the client asked for progress (a progress token), so a host can show it
// while the code runs; nil otherwise.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) func(session.Event) {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	var mu sync.Mutex
	n := 0
	return func(e session.Event) {
		msg := e.Stdout + e.Stderr
		if msg == "" {
			return
		}
		if len(msg) > maxProgressMessage {
			msg = msg[:maxProgressMessage]
			for !utf8.ValidString(msg) {
				msg = msg[:len(msg)-1]
			}
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		// Best effort: a client gone or a closed stream only loses the glimpse.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
	}
}
