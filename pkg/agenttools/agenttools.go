// Package agenttools gives Go agent frameworks sessionbox's tools as plain
// functions with JSON schemas: by default the two seed tools an agent needs,
// execute_python {code, timeoutSecs?} and install_packages {packages,
// indexUrl?}, bound to one session of a sessionbox API. They are the MCP
// server's tools (pkg/mcpserver), called in process, so names, schemas,
// descriptions and results are the same an MCP client sees.
//
//	c := client.New(os.Getenv("SESSIONBOX_URL"), os.Getenv("SESSIONBOX_API_KEY"), nil)
//	kit, err := agenttools.New(ctx, c, "chat-42")
//	...
//	defer kit.Close()
//	for _, t := range kit.Tools() {
//		// register t.Name, t.Description and t.InputSchema with the framework;
//		// on a call: res, err := t.Call(ctx, argumentsJSON); give res.Text to the model.
//	}
package agenttools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
)

// SeedTools are the tools New gives when none are named.
var SeedTools = []string{"execute_python", "install_packages"}

// Toolkit holds the tools of one session; Close releases it.
type Toolkit struct {
	server *mcp.ServerSession
	client *mcp.ClientSession
	tools  []Tool
}

// Tool is one tool: what a framework shows the model, and the call.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage
	cs          *mcp.ClientSession
}

// Result is what a tool call gave the model.
type Result struct {
	// Text is the main text: output, the last expression, the traceback,
	// and notes on restarts, timeouts and cut output.
	Text string
	// Images are charts and other images the code displayed.
	Images []Image
	// IsError reports a failed call (an exception, a timeout, refused
	// input); Text says why in words the model can act on.
	IsError bool
	// Structured is the tool's structured result as JSON (flags and
	// counts, per its outputSchema, e.g. execute_python's success), or nil.
	Structured json.RawMessage
}

// Image is one image of a result.
type Image struct {
	MIMEType string
	Data     []byte
}

// New binds tools to the session sessionID of the API c reaches: the ones
// named (any of the MCP server's), or SeedTools.
func New(ctx context.Context, c *client.Client, sessionID string, names ...string) (*Toolkit, error) {
	return NewWithBackend(ctx, ClientBackend{Client: c}, sessionID, names...)
}

// NewWithBackend is New over any backend, e.g. the Manager in process.
func NewWithBackend(ctx context.Context, b mcpserver.Backend, sessionID string, names ...string) (*Toolkit, error) {
	if len(names) == 0 {
		names = SeedTools
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(b, sessionID, mcpserver.Options{}).Connect(ctx, serverT, nil)
	if err != nil {
		return nil, fmt.Errorf("start tools: %w", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agenttools", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		_ = ss.Close()
		return nil, fmt.Errorf("connect tools: %w", err)
	}
	k := &Toolkit{server: ss, client: cs}
	if err := k.load(ctx, names); err != nil {
		_ = k.Close()
		return nil, err
	}
	return k, nil
}

func (k *Toolkit) load(ctx context.Context, names []string) error {
	list, err := k.client.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	var all []string
	for _, name := range names {
		i := slices.IndexFunc(list.Tools, func(t *mcp.Tool) bool { return t.Name == name })
		if i < 0 {
			for _, t := range list.Tools {
				all = append(all, t.Name)
			}
			return fmt.Errorf("no tool %q; there are %s", name, strings.Join(all, ", "))
		}
		t := list.Tools[i]
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return fmt.Errorf("tool %s: schema: %w", name, err)
		}
		k.tools = append(k.tools, Tool{Name: t.Name, Description: t.Description, InputSchema: schema, cs: k.client})
	}
	return nil
}

// Tools returns the toolkit's tools, in the order asked for.
func (k *Toolkit) Tools() []Tool { return k.tools }

// Close ends the toolkit. The session's sandbox stays (the service's idle
// timeout stops it).
func (k *Toolkit) Close() error {
	err := k.client.Close()
	_ = k.server.Close()
	return err
}

// Call runs the tool with arguments as the model sent them (a JSON object).
// A failed call the model should see is Result.IsError; err is for calls
// that could not be made at all (malformed arguments, a closed toolkit).
func (t Tool) Call(ctx context.Context, arguments json.RawMessage) (Result, error) {
	var args map[string]any
	if len(arguments) > 0 {
		if err := json.Unmarshal(arguments, &args); err != nil {
			return Result{}, fmt.Errorf("%s: arguments are not a JSON object: %w", t.Name, err)
		}
	}
	res, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: args})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	out := Result{IsError: res.IsError}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			out.Images = append(out.Images, Image{MIMEType: c.MIMEType, Data: c.Data})
		case *mcp.ResourceLink:
			text = append(text, fmt.Sprintf("file %s: %s", c.Title, c.URI))
		}
	}
	out.Text = strings.Join(text, "\n")
	if res.StructuredContent != nil {
		if out.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			return Result{}, fmt.Errorf("%s: structured result: %w", t.Name, err)
		}
	}
	return out, nil
}
