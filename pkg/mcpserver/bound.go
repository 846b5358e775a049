package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxTextBytes is Options.MaxTextBytes' default: about 6,000 tokens,
// enough for a model to see what happened, small enough for many calls in
// one context window.
const DefaultMaxTextBytes = 24 << 10

// outputDir is where a cut result's whole text is saved in the sandbox:
// outside /home/user, so it is neither listed with the user's files nor
// kept in the workspace, and gone with the sandbox.
const outputDir = "/tmp/sessionbox-mcp"

// bound keeps the text of res within max bytes: the head (two thirds) and
// the tail, where notes, first lines and the final error stand, with a
// line in between saying how much was cut and where the whole text was
// saved. save writes the whole text to the sandbox and returns its path.
func bound(ctx context.Context, res *mcp.CallToolResult, max int, save func(ctx context.Context, data []byte) (string, error)) {
	for i, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || len(tc.Text) <= max {
			continue
		}
		where := "it could not be saved in the sandbox"
		if p, err := save(ctx, []byte(tc.Text)); err == nil {
			where = "the whole text is in " + p + " in the sandbox: read parts with read_file (offset, length) or search it with run_command (grep)"
		}
		res.Content[i] = &mcp.TextContent{Text: clip(tc.Text, max, where)}
	}
}

// clip cuts s to about max bytes, keeping its head and tail whole
// characters and saying what is missing.
func clip(s string, max int, where string) string {
	// The line in between takes well under markRoom bytes.
	const markRoom = 512
	headLen, tailLen := (max-markRoom)*2/3, (max-markRoom)/3
	head, tail := s[:headLen], s[len(s)-tailLen:]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	cut := len(s) - len(head) - len(tail)
	mark := fmt.Sprintf("\n… [%d of %d bytes cut here (lines %d to %d); %s] …\n", cut, len(s),
		strings.Count(head, "\n")+1, strings.Count(s, "\n")-strings.Count(tail, "\n")+1, where)
	return head + mark + tail
}

// saver saves a tool's whole text through b, in a file of its own.
func saver(b Backend, sessionID, tool string) func(ctx context.Context, data []byte) (string, error) {
	return func(ctx context.Context, data []byte) (string, error) {
		var r [6]byte
		_, _ = rand.Read(r[:])
		p := outputDir + "/" + tool + "-" + hex.EncodeToString(r[:]) + ".txt"
		if _, err := b.WriteFile(ctx, sessionID, p, data); err != nil {
			return "", err
		}
		return p, nil
	}
}
