package mcpserver

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestExecResult(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nrest")
	for _, tc := range []struct {
		name    string
		res     session.ExecResult
		isError bool
		want    []string
		images  int
		links   int
	}{
		{"value and stdout", session.ExecResult{Success: true, Stdout: "hi\n", Results: []session.Result{{Text: "42", IsMainResult: true}}},
			false, []string{"[stdout]\nhi\n", "[result]\n42"}, 0, 0},
		{"exception", session.ExecResult{Error: &session.ExecError{Name: "ZeroDivisionError", Value: "division by zero", Traceback: "Traceback...\nZeroDivisionError: division by zero"}},
			true, []string{"[error]\nTraceback", "ZeroDivisionError"}, 0, 0},
		{"timeout", session.ExecResult{TimedOut: true, Error: &session.ExecError{Name: "TimeoutError", Value: "timed out"}},
			true, []string{"did not finish within its time limit", "TimeoutError: timed out"}, 0, 0},
		{"sandbox replaced", session.ExecResult{Success: true, Restarted: true, KernelRestarted: true},
			false, []string{"the sandbox was replaced: variables and imports from earlier calls are gone", "(no output)"}, 0, 0},
		{"sandbox replaced, files restored", session.ExecResult{Success: true, Restarted: true,
			Restored: &session.RestoreInfo{Files: 3, Bytes: 10, CheckpointAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}},
			false, []string{"3 files under /home/user were restored from the workspace saved at 2026-11-23T10:00:00Z"}, 0, 0},
		{"kernel restarted", session.ExecResult{Success: true, KernelRestarted: true},
			false, []string{"the Python kernel restarted"}, 0, 0},
		{"cut", session.ExecResult{Success: true, Truncated: true, Stdout: "x"},
			false, []string{"the output was cut", "200 KB"}, 0, 0},
		{"chart and artifact", session.ExecResult{Success: true,
			Results:   []session.Result{{Text: "<Figure>", PNG: base64.StdEncoding.EncodeToString(png)}},
			Artifacts: []session.Artifact{{Path: "/home/user/out.csv", SizeBytes: 3, MimeType: "text/csv", DownloadURL: "https://x/out.csv"}}},
			false, []string{}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := execResult(&tc.res, 200<<10)
			if out.IsError != tc.isError {
				t.Fatalf("isError %v, want %v", out.IsError, tc.isError)
			}
			text := textOf(out)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
			var images, links int
			for _, c := range out.Content {
				switch c := c.(type) {
				case *mcp.ImageContent:
					images++
					if !bytes.Equal(c.Data, png) || c.MIMEType != "image/png" {
						t.Errorf("image %q %s", c.Data, c.MIMEType)
					}
				case *mcp.ResourceLink:
					links++
					if c.URI != "https://x/out.csv" || c.Name != "out.csv" || *c.Size != 3 {
						t.Errorf("link %+v", c)
					}
				}
			}
			if images != tc.images || links != tc.links {
				t.Fatalf("%d images, %d links; want %d, %d", images, links, tc.images, tc.links)
			}
			for i, c := range out.Content {
				if _, ok := c.(*mcp.ImageContent); ok {
					if cap, ok := out.Content[i-1].(*mcp.TextContent); !ok || !strings.HasPrefix(cap.Text, "[image") {
						t.Errorf("image %d has no caption before it", i)
					}
				}
			}
			for i, c := range out.Content {
				if tc, ok := c.(*mcp.TextContent); ok && tc.Text == "" {
					t.Errorf("content %d is an empty text block", i)
				}
			}
			if out.StructuredContent != nil {
				t.Errorf("structured content %#v: the tool's typed output sets it", out.StructuredContent)
			}
		})
	}
}

func TestFileResult(t *testing.T) {
	t.Parallel()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 20)...)
	for _, tc := range []struct {
		name string
		path string
		data []byte
		span fileSpan
		kind string // text, image, resource
		want string
	}{
		{"text", "a.txt", []byte("héllo"), fileSpan{size: 6}, "text", "héllo"},
		{"python", "/home/user/x.py", []byte("print(1)\n"), fileSpan{size: 9}, "text", "print(1)"},
		{"first window", "big.log", []byte("abc"), fileSpan{size: 10, more: true}, "text", "bytes 0 to 3 of 10; read on with offset 3]\nabc"},
		{"cut in a character", "big.log", []byte("ab\xc3"), fileSpan{size: 10, more: true}, "text", "read on with offset 2]\nab"},
		{"starts in a character", "big.log", []byte("\xa9cd"), fileSpan{offset: 4, size: 7}, "text", "bytes 5 to 7 of 7; the end of the file]\ncd"},
		{"past the end", "big.log", nil, fileSpan{offset: 40, size: 7}, "text", "past the end"},
		{"image", "chart.png", png, fileSpan{size: 28}, "image", "/home/user/chart.png: image/png, 28 bytes"},
		{"binary", "blob.bin", []byte{0, 1, 2}, fileSpan{size: 3}, "resource", "application/octet-stream"},
		{"large image", "chart.png", png, fileSpan{size: 5 << 20, more: true}, "text", "too large to show"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := fileResult(tc.path, tc.data, tc.span)
			last := out.Content[len(out.Content)-1]
			switch c := last.(type) {
			case *mcp.TextContent:
				if tc.kind != "text" {
					t.Fatalf("text, want %s", tc.kind)
				}
			case *mcp.ImageContent:
				if tc.kind != "image" || c.MIMEType != "image/png" {
					t.Fatalf("image %s, want %s", c.MIMEType, tc.kind)
				}
			case *mcp.EmbeddedResource:
				if tc.kind != "resource" || !bytes.Equal(c.Resource.Blob, tc.data) || c.Resource.MIMEType == "" ||
					!strings.HasPrefix(c.Resource.URI, "file:///home/user/") {
					t.Fatalf("resource %+v, want %s", c.Resource, tc.kind)
				}
			}
			if !strings.Contains(textOf(out), tc.want) {
				t.Fatalf("text %q lacks %q", textOf(out), tc.want)
			}
		})
	}
}

func TestDecodeContent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		content, encoding string
		want              string
		refused           string
	}{
		{"hi", "", "hi", ""},
		{"hi", "UTF-8", "hi", ""},
		{"aGk=", "base64", "hi", ""},
		{"!!", "base64", "", "not valid base64"},
		{"hi", "latin-1", "", `"latin-1" is not supported`},
	} {
		got, refused := decodeContent(tc.content, tc.encoding)
		if string(got) != tc.want || !strings.Contains(refused, tc.refused) || (tc.refused == "") != (refused == "") {
			t.Errorf("decodeContent(%q, %q) = %q, %q", tc.content, tc.encoding, got, refused)
		}
	}
}

func TestUploadURLsResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		res     session.URLUploadResult
		isError bool
		want    []string
	}{
		{"all landed", session.URLUploadResult{Status: session.URLUploadSuccess,
			Uploaded: []session.URLUploaded{{SourceURL: "https://x/a.csv", Path: "/home/user/a.csv", SizeBytes: 2048}}},
			false, []string{"Fetched 1 of 1", "/home/user/a.csv (2 KB) <- https://x/a.csv"}},
		{"partial", session.URLUploadResult{Status: session.URLUploadPartialSuccess,
			Uploaded: []session.URLUploaded{{SourceURL: "https://x/a.csv", Path: "/home/user/a.csv", SizeBytes: 1}},
			Errors:   []session.URLUploadError{{SourceURL: "https://x/b.csv", Error: "404 Not Found"}}},
			false, []string{"Fetched 1 of 2", "Failed:\nhttps://x/b.csv: 404 Not Found"}},
		{"none", session.URLUploadResult{Status: session.URLUploadFailure, Restarted: true,
			Errors: []session.URLUploadError{{SourceURL: "http://10.0.0.1/", Error: "private address refused"}}},
			true, []string{"sandbox was replaced", "Fetched 0 of 1", "private address refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := uploadURLsResult(&tc.res)
			if out.IsError != tc.isError {
				t.Fatalf("isError %v", out.IsError)
			}
			for _, w := range tc.want {
				if !strings.Contains(textOf(out), w) {
					t.Errorf("text %q lacks %q", textOf(out), w)
				}
			}
		})
	}
}
