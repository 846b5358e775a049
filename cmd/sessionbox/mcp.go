package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/mcpserver"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func mcpCommand() command {
	return command{name: "mcp", summary: "serve the MCP tools over stdio, for desktop agents", run: withEnv(runMCP)}
}

// runMCP serves the MCP tools on stdin and stdout against the API at
// SESSIONBOX_URL, bound to one session for the life of the process.
func runMCP(ctx context.Context, args []string, getenv func(string) string) error {
	fl := flag.NewFlagSet("mcp", flag.ContinueOnError)
	sid := fl.String("session", "", "the session the tools act on (default: a new one, mcp-<random>, for this process)")
	fl.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sessionbox mcp [--session ID]\n\n"+
			"Speaks the Model Context Protocol on stdin/stdout; SESSIONBOX_URL and SESSIONBOX_API_KEY name the API.")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		fl.Usage()
		return fmt.Errorf("unexpected argument %q", fl.Arg(0))
	}
	id := *sid
	if id == "" {
		id = mcpserver.NewSessionID()
	} else if err := session.ValidateSessionID(id); err != nil {
		return fmt.Errorf("--session: %w", err)
	}
	c, err := apiClient(getenv)
	if err != nil {
		return err
	}
	// stdout carries the protocol; logs go to stderr, where MCP hosts
	// collect them.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s := mcpserver.NewServer(mcpserver.ClientBackend{Client: c}, id, mcpserver.Options{Logger: logger})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}
