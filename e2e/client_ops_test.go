package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/client"
)

// TestClientOperations: the client methods that map one operation each
// work against the local service: health and the document, an explicit
// start, the presigned upload and download steps one by one, file
// deletion, background runs, MCP, and typed problems.
func TestClientOperations(t *testing.T) {
	s := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := client.New(s.url, s.alice, nil)
	const sid = "ops"

	t.Run("health and document", func(t *testing.T) {
		if st, err := client.New(s.url, "", nil).Health(ctx); err != nil || st != "ok" {
			t.Fatalf("health %q %v", st, err)
		}
		doc, err := c.OpenAPI(ctx)
		var d struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		if err != nil || json.Unmarshal(doc, &d) != nil || !strings.HasPrefix(d.OpenAPI, "3.") || d.Paths["/v1/runs/{runId}"] == nil {
			t.Fatalf("document %.80s: %v", doc, err)
		}
	})
	t.Run("start", func(t *testing.T) {
		s, err := c.StartSandbox(ctx, sid, client.StartOptions{IdleTimeoutSecs: 300, Metadata: map[string]string{"team": "a"}})
		if err != nil || s.State != "running" || s.SandboxID == "" || s.Metadata["team"] != "a" || s.IdleTimeoutSecs != 300 || s.CreatedAt == nil {
			t.Fatalf("start: %+v %v", s, err)
		}
	})
	t.Run("presigned upload, import, download url, delete", func(t *testing.T) {
		data := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		ticket, err := c.UploadURL(ctx, sid, "up/x.bin", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, ticket.Method, ticket.UploadURL, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range ticket.Headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("PUT to the upload URL: %v %v", resp, err)
		}
		_ = resp.Body.Close()
		e, err := c.ImportFile(ctx, sid, ticket.TransferID)
		if err != nil || e.Path != "/home/user/up/x.bin" || e.Size != int64(len(data)) {
			t.Fatalf("import: %+v %v", e, err)
		}
		dl, err := c.DownloadURL(ctx, sid, "up/x.bin")
		if err != nil || dl.SizeBytes != int64(len(data)) {
			t.Fatalf("download url: %+v %v", dl, err)
		}
		got, err := http.Get(dl.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got.Body)
		_ = got.Body.Close()
		if !bytes.Equal(b, data) {
			t.Fatalf("downloaded %d bytes, want the %d uploaded", len(b), len(data))
		}
		if err := c.DeleteFile(ctx, sid, "up/x.bin"); err != nil {
			t.Fatal(err)
		}
		_, _, err = c.OpenFile(ctx, sid, "up/x.bin")
		if !client.IsStatus(err, http.StatusNotFound) {
			t.Fatalf("read after delete: %v, want 404", err)
		}
	})
	t.Run("runs", func(t *testing.T) {
		acc, err := c.SubmitRun(ctx, sid, client.RunRequest{Code: "print('bg'); 6 * 7", IdempotencyKey: "ops-1"})
		if err != nil || acc.RunID == "" {
			t.Fatalf("submit: %+v %v", acc, err)
		}
		again, err := c.SubmitRun(ctx, sid, client.RunRequest{Code: "print('bg'); 6 * 7", IdempotencyKey: "ops-1"})
		if err != nil || again.RunID != acc.RunID {
			t.Fatalf("the same idempotency key made run %+v (%v), want %s", again, err, acc.RunID)
		}
		run, err := c.WaitRun(ctx, acc.RunID, 100*time.Millisecond)
		if err != nil || run.Status != "succeeded" || run.Result == nil || run.Result.Stdout != "bg\n" || run.FinishedAt == nil {
			t.Fatalf("run: %+v %v", run, err)
		}
		_, err = c.GetRun(ctx, "run-that-never-was")
		var p *client.Problem
		if !client.IsStatus(err, http.StatusNotFound) || !errors.As(err, &p) || p.Kind() != "not-found" {
			t.Fatalf("unknown run: %v", err)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		cs, err := c.ConnectMCP(ctx, sid, &mcp.Implementation{Name: "client-ops-test", Version: "1"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": "40 + 2"}})
		if err != nil || res.IsError {
			t.Fatalf("execute_python: %+v %v", res, err)
		}
		var text strings.Builder
		for _, content := range res.Content {
			if tc, ok := content.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if !strings.Contains(text.String(), "42") {
			t.Fatalf("execute_python said %q", text.String())
		}
	})
	t.Run("stop and delete", func(t *testing.T) {
		s, err := c.Stop(ctx, sid)
		if err != nil || s.State != "stopped" {
			t.Fatalf("stop: %+v %v", s, err)
		}
		if err := c.DeleteSession(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Status(ctx, sid); !client.IsStatus(err, http.StatusNotFound) {
			t.Fatalf("status after delete: %v", err)
		}
	})
}
