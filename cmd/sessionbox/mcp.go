package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/agenttools"
	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/mcpserver"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func mcpCommand() command {
	return command{name: "mcp", summary: "serve the MCP tools over stdio, for desktop agents", run: withEnv(runMCP)}
}

// runMCP serves the MCP tools on stdin and stdout against the API at
// SESSIONBOX_URL, bound to one session for the life of the process.
func runMCP(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "mcp", synopsis: []string{"[--session ID]"},
		about: "Speaks the Model Context Protocol on stdin/stdout: the tools act on one session of the API.", api: true})
	sid := fl.String("session", "", "the session the tools act on, `ID` (default: a new one, mcp-<random>, for this process)")
	url := fl.String("url", "", "the API's base `URL` [$SESSIONBOX_URL]")
	args, err := fl.parse(args)
	if err != nil {
		return err
	}
	if err := fl.noArgs(args); err != nil {
		return err
	}
	id := *sid
	if id == "" {
		id = mcpserver.NewSessionID()
	} else if err := session.ValidateSessionID(id); err != nil {
		return fmt.Errorf("--session: %w", err)
	}
	c, err := newClient(*url, getenv)
	if err != nil {
		return err
	}
	if err := checkAPI(ctx, c); err != nil {
		return err
	}
	// stdout carries the protocol; logs go to stderr, where MCP hosts
	// collect them.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s := mcpserver.NewServer(agenttools.ClientBackend{Client: c}, id, mcpserver.Options{Logger: logger})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}

// checkAPI lists one session, so a wrong key or URL stops `sessionbox mcp`
// at start with a message the user reads in the host's log, rather than
// failing a model's first tool call.
func checkAPI(ctx context.Context, c *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, _, err := c.Sessions(ctx, 1, "")
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrUnauthorized):
		return fmt.Errorf("the API refused SESSIONBOX_API_KEY (%w); set a key `sessionbox keys` made", err)
	}
	return fmt.Errorf("check the API before serving: %w", err)
}
