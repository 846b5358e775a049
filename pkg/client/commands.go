package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// CommandRequest is a shell command for the session's sandbox, run by
// bash -l -c.
type CommandRequest struct {
	Cmd string `json:"cmd"`
	// Cwd is the working directory; relative to /home/user, the default.
	Cwd  string            `json:"cwd,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	// TimeoutSecs bounds a foreground command (the service's default when
	// 0); for a background one it is the process's lifetime (0: none).
	TimeoutSecs int `json:"timeoutSecs,omitempty"`
	// User is "user" (the default) or "root".
	User string `json:"user,omitempty"`
}

// RunCommand runs a shell command and waits for its end. A non-zero exit
// and a timeout are results, not errors (see session.CommandResult). With
// onEvent it streams: each piece of output reaches onEvent as it happens.
func (c *Client) RunCommand(ctx context.Context, sessionID string, req CommandRequest, onEvent func(session.Event)) (*session.CommandResult, error) {
	path := c.sessionPath(sessionID, "/commands")
	if onEvent == nil {
		var out session.CommandResult
		var raw json.RawMessage
		if err := c.doJSON(ctx, http.MethodPost, path, req, &raw); err != nil {
			return nil, err
		}
		if err := decodeLong(raw, &out, path); err != nil {
			return nil, err
		}
		return &out, nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, path, bytes.NewReader(b),
		http.Header{"Accept": {"application/x-ndjson"}, "Content-Type": {"application/json"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readCommandStream(resp.Body, onEvent)
}

// readCommandStream reads a command's stream: its output, a timeout's
// error, then the summary, joined into the whole result.
func readCommandStream(r io.Reader, onEvent func(session.Event)) (*session.CommandResult, error) {
	got, summary, err := readLines(r, onEvent)
	if err != nil {
		return nil, err
	}
	var out session.CommandResult
	if err := json.Unmarshal(summary, &out); err != nil {
		return nil, fmt.Errorf("read stream end: %w", err)
	}
	out.Stdout, out.Stderr, out.Error = got.stdout.String(), got.stderr.String(), got.err
	return &out, nil
}

// decodeLong decodes the answer of a call the API may have answered 200
// before it ended: a failure after that comes as a Problem in the body.
func decodeLong(raw json.RawMessage, out any, path string) error {
	var probe struct {
		Type   string          `json:"type"`
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	if probe.Type != "" && len(probe.Status) > 0 {
		p := &Problem{}
		if err := json.Unmarshal(raw, p); err != nil {
			return fmt.Errorf("POST %s: decode problem: %w", path, err)
		}
		return p
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return nil
}

// StartCommand starts a shell command in the background and returns its
// id as soon as it runs.
func (c *Client) StartCommand(ctx context.Context, sessionID string, req CommandRequest) (*session.CommandStarted, error) {
	body := struct {
		CommandRequest
		Background bool `json:"background"`
	}{req, true}
	var out session.CommandStarted
	if err := c.doJSON(ctx, http.MethodPost, c.sessionPath(sessionID, "/commands"), body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Commands lists the background commands running in the session's sandbox.
func (c *Client) Commands(ctx context.Context, sessionID string) ([]session.CommandInfo, error) {
	var out struct {
		Commands []session.CommandInfo `json:"commands"`
	}
	if err := c.doJSON(ctx, http.MethodGet, c.sessionPath(sessionID, "/commands"), nil, &out); err != nil {
		return nil, err
	}
	return out.Commands, nil
}

// CommandStatus says whether a background command runs, or how it ended.
func (c *Client) CommandStatus(ctx context.Context, sessionID, commandID string) (*session.CommandInfo, error) {
	var out session.CommandInfo
	if err := c.doJSON(ctx, http.MethodGet, c.commandPath(sessionID, commandID, ""), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AttachCommand reattaches to a background command: onEvent (which may be
// nil) gets its output, and the result says how it ended.
func (c *Client) AttachCommand(ctx context.Context, sessionID, commandID string, onEvent func(session.Event)) (*session.CommandResult, error) {
	resp, err := c.do(ctx, http.MethodGet, c.commandPath(sessionID, commandID, ""), nil, http.Header{"Accept": {"application/x-ndjson"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readCommandStream(resp.Body, onEvent)
}

// ReadCommandOutput returns what a background command printed since the
// last read, waiting up to wait (at most a minute) for its end. Unlike an
// attachment, a read whose answer is lost in transit is the only way to
// lose output, and the whole output stays in the files it names.
func (c *Client) ReadCommandOutput(ctx context.Context, sessionID, commandID string, wait time.Duration) (*session.CommandOutput, error) {
	p := c.commandPath(sessionID, commandID, "/output") + "?waitSecs=" + strconv.Itoa(int(wait/time.Second))
	var out session.CommandOutput
	if err := c.doJSON(ctx, http.MethodGet, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// KillCommand sends SIGKILL to a background command.
func (c *Client) KillCommand(ctx context.Context, sessionID, commandID string) error {
	return c.doJSON(ctx, http.MethodPost, c.commandPath(sessionID, commandID, "/kill"), nil, nil)
}

func (c *Client) commandPath(sessionID, commandID, rest string) string {
	return c.sessionPath(sessionID, "/commands/"+url.PathEscape(commandID)+rest)
}
