package mcpserver

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// execResult turns an execution into what a model reads: one text block
// (notes first, then stdout, stderr, the last expression, the traceback),
// an image block per PNG or JPEG result, each after a line of text saying
// what it is (a client that drops images still tells the model), and a
// resource link per artifact. An exception or a timeout is an error result,
// so the model sees that its code failed.
func execResult(res *session.ExecResult, maxOutput int) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.Error != nil}
	var text strings.Builder
	for _, n := range execNotes(res, maxOutput) {
		text.WriteString("Note: " + n + "\n")
	}
	notes := text.Len()
	section(&text, "stdout", res.Stdout)
	section(&text, "stderr", res.Stderr)
	var images []mcp.Content
	for _, r := range res.Results {
		if img := imageOf(r); img != nil {
			images = append(images, &mcp.TextContent{Text: imageCaption(len(images)/2+1, r, img)}, img)
			continue
		}
		label := "display"
		if r.IsMainResult {
			label = "result"
		}
		section(&text, label, resultText(r))
	}
	if e := res.Error; e != nil {
		section(&text, "error", errorText(e))
	}
	if text.Len() == notes && len(images) == 0 {
		text.WriteString("(no output)")
	}
	// A chart alone has its caption for text: no empty block before it.
	if t := strings.TrimRight(text.String(), "\n"); t != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: t})
	}
	out.Content = append(out.Content, images...)
	for _, a := range res.Artifacts {
		out.Content = append(out.Content, artifactLink(a))
	}
	return out
}

// imageCaption says what an image block is, in words: its number, kind,
// size and the text form the code gave it (matplotlib's "<Figure size
// 640x480 with 1 Axes>").
func imageCaption(n int, r session.Result, img *mcp.ImageContent) string {
	c := fmt.Sprintf("[image %d: a %s the code displayed, %s", n, strings.TrimPrefix(img.MIMEType, "image/"), byteSize(len(img.Data)))
	if r.Text != "" && len(r.Text) < 200 {
		c += "; " + strings.TrimSpace(r.Text)
	}
	return c + "]"
}

// execNotes says, in words a model can act on, what the flags of a result
// mean.
func execNotes(res *session.ExecResult, maxOutput int) []string {
	var notes []string
	switch {
	case res.Restarted && res.Restored != nil:
		notes = append(notes, fmt.Sprintf("the sandbox was replaced: variables and imports from earlier calls are gone; "+
			"%d files under /home/user were restored from the workspace saved at %s.", res.Restored.Files, res.Restored.CheckpointAt.UTC().Format(time.RFC3339)))
	case res.Restarted:
		notes = append(notes, "the sandbox was replaced: variables and imports from earlier calls are gone (files written by earlier calls may be gone too).")
	case res.KernelRestarted:
		notes = append(notes, "the Python kernel restarted: variables and imports from earlier calls are gone; files are kept.")
	}
	if res.TimedOut {
		notes = append(notes, "the code did not finish within its time limit and was interrupted; make it faster, run it in parts, or pass a larger timeoutSecs.")
	}
	if res.Truncated {
		notes = append(notes, fmt.Sprintf("the output was cut: stdout and stderr keep at most %s each, and large rich results are cut to their text. Print less, or write large output to a file.", byteSize(maxOutput)))
	}
	return notes
}

func section(b *strings.Builder, label, body string) {
	if body == "" {
		return
	}
	fmt.Fprintf(b, "[%s]\n%s", label, body)
	if !strings.HasSuffix(body, "\n") {
		b.WriteByte('\n')
	}
}

// resultText is the best text form of a rich result.
func resultText(r session.Result) string {
	switch {
	case r.Text != "":
		return r.Text
	case r.Markdown != "":
		return r.Markdown
	case r.LaTeX != "":
		return r.LaTeX
	case r.HTML != "":
		return r.HTML
	case r.SVG != "":
		return "(an SVG image)"
	case r.PDF != "":
		return "(a PDF document)"
	}
	return ""
}

func errorText(e *session.ExecError) string {
	if e.Traceback != "" {
		return e.Traceback
	}
	return e.Name + ": " + e.Value
}

// imageOf returns a PNG or JPEG result as an image block, or nil.
func imageOf(r session.Result) *mcp.ImageContent {
	for _, img := range []struct{ b64, mime string }{{r.PNG, "image/png"}, {r.JPEG, "image/jpeg"}} {
		if img.b64 == "" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(img.b64)
		if err != nil {
			continue
		}
		return &mcp.ImageContent{Data: data, MIMEType: img.mime}
	}
	return nil
}

func artifactLink(a session.Artifact) mcp.Content {
	size := a.SizeBytes
	uri := a.DownloadURL
	if uri == "" {
		uri = "file://" + a.Path
	}
	return &mcp.ResourceLink{URI: uri, Name: path.Base(a.Path), Title: a.Path, MIMEType: a.MimeType, Size: &size,
		Description: "a file the code wrote in the sandbox; the link downloads it for a short time"}
}

func installResult(packages []string, res *session.InstallResult) *mcp.CallToolResult {
	var text strings.Builder
	if res.Restarted {
		text.WriteString("Note: the sandbox was replaced before the install: variables from earlier calls are gone.\n")
	}
	if res.Success {
		fmt.Fprintf(&text, "Installed %s.\n", strings.Join(packages, ", "))
		section(&text, "pip output (end)", tail(res.Stdout, 2000))
	} else {
		fmt.Fprintf(&text, "pip failed (exit code %d); nothing may have been installed.\n", res.ExitCode)
		section(&text, "pip stderr (end)", tail(res.Stderr, 4000))
		section(&text, "pip stdout (end)", tail(res.Stdout, 2000))
	}
	return &mcp.CallToolResult{
		IsError: !res.Success,
		Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}},
	}
}

// tail keeps the last n bytes of s, where pip says how it ended.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for !utf8.ValidString(s) && len(s) > 0 {
		s = s[1:]
	}
	return "…" + s
}

func listResult(dir string, entries []session.FileEntry) *mcp.CallToolResult {
	var text strings.Builder
	if len(entries) == 0 {
		fmt.Fprintf(&text, "%s is empty.", dir)
	}
	for _, e := range entries {
		switch e.Type {
		case "dir":
			fmt.Fprintf(&text, "%s/\n", e.Path)
		case "symlink":
			fmt.Fprintf(&text, "%s (symlink)\n", e.Path)
		default:
			fmt.Fprintf(&text, "%s (%s)\n", e.Path, byteSize(int(e.Size)))
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}}}
}

// readSpan is the part of a file to read: length bytes from offset.
type readSpan struct{ offset, length int64 }

// fileSpan is what was read of a file: from offset, with more after it or
// not; size is the file's length, or -1 when unknown.
type fileSpan struct {
	offset, size int64
	more         bool
}

// maxBlobBytes bounds a binary file shown as a resource: its base64 must
// fit a result's text budget.
const maxBlobBytes = 16 << 10

// readWindow skips to w.offset and reads at most w.length bytes,
// reporting whether there were more.
func readWindow(r io.Reader, w readSpan) ([]byte, bool, error) {
	if _, err := io.CopyN(io.Discard, r, w.offset); err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("read file: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, w.length+1))
	if err != nil {
		return nil, false, fmt.Errorf("read file: %w", err)
	}
	if int64(len(data)) > w.length {
		return data[:w.length], true, nil
	}
	return data, false, nil
}

// fileResult shows a file as a model best takes it: text as text (a
// window of it, saying where to read on), common images as images with a
// caption, small other files as a base64 resource, larger ones described.
func fileResult(p string, data []byte, span fileSpan) *mcp.CallToolResult {
	mimeType := mimeOf(p, data)
	abs := absPath(p)
	if isText(data, mimeType) && !strings.HasPrefix(mimeType, "image/") {
		return textResult(abs, data, span)
	}
	whole := span.offset == 0 && !span.more
	size := span.size
	if size < 0 {
		size = span.offset + int64(len(data))
	}
	caption := fmt.Sprintf("%s: %s, %s", abs, mimeType, byteSize(int(size)))
	switch {
	case whole && isModelImage(mimeType):
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: caption}, &mcp.ImageContent{Data: data, MIMEType: mimeType}}}
	case whole && len(data) <= maxBlobBytes:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: caption},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file://" + abs, MIMEType: mimeType, Blob: data}}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: caption +
		": too large to show here. Inspect it with execute_python (e.g. PIL for images, pandas for tables)."}}}
}

// textResult is a window of a text file, with a line saying which bytes
// these are and where to read on when it is not the whole file.
func textResult(abs string, data []byte, span fileSpan) *mcp.CallToolResult {
	start := span.offset
	// A window may begin or end inside a character: drop the pieces.
	for len(data) > 0 && start > 0 && !utf8.RuneStart(data[0]) {
		data, start = data[1:], start+1
	}
	text := string(data)
	if span.more {
		for !utf8.ValidString(text) && len(text) > 0 {
			text = text[:len(text)-1]
		}
	}
	end := start + int64(len(text))
	if span.offset == 0 && !span.more {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	of := "more"
	if span.size >= 0 {
		of = fmt.Sprintf("%d", span.size)
	}
	head := fmt.Sprintf("[%s: bytes %d to %d of %s", abs, start, end, of)
	switch {
	case len(data) == 0 && !span.more:
		head += "; offset is at or past the end of the file]"
	case span.more:
		head += fmt.Sprintf("; read on with offset %d]", end)
	default:
		head += "; the end of the file]"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: head + "\n" + text}}}
}

func mimeOf(p string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		if mt, _, err := mime.ParseMediaType(t); err == nil {
			return mt
		}
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}

func isText(data []byte, mimeType string) bool {
	if strings.IndexByte(string(data), 0) >= 0 {
		return false
	}
	// A cut may split the last character; the rest decides.
	valid := data
	for i := 0; i < utf8.UTFMax && len(valid) > 0 && !utf8.Valid(valid); i++ {
		valid = valid[:len(valid)-1]
	}
	return utf8.Valid(valid) || strings.HasPrefix(mimeType, "text/")
}

func isModelImage(mimeType string) bool {
	switch mimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

func absPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(session.WorkDir, p)
}

// decodeContent returns write_file's bytes, or why they are refused.
func decodeContent(content, encoding string) ([]byte, string) {
	switch strings.ToLower(encoding) {
	case "", "utf-8", "utf8", "text":
		return []byte(content), ""
	case "base64":
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, "content is not valid base64 (standard alphabet, with padding); send the bytes again, or text with encoding utf-8."
		}
		return data, ""
	}
	return nil, fmt.Sprintf("encoding %q is not supported; use \"utf-8\" for text or \"base64\" for bytes.", encoding)
}

func writeResult(e session.FileEntry) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Wrote %d bytes to %s.", e.Size, e.Path)}}}
}

// byteSize writes n as people read sizes (200 KB, 1 MB).
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// uploadURLsResult lists what landed where and why the rest did not; it is
// an error result only when nothing landed.
func uploadURLsResult(res *session.URLUploadResult) *mcp.CallToolResult {
	var text strings.Builder
	if res.Restarted {
		text.WriteString("Note: the sandbox was replaced before the upload: variables from earlier calls are gone.\n")
	}
	fmt.Fprintf(&text, "Fetched %d of %d URLs.\n", len(res.Uploaded), len(res.Uploaded)+len(res.Errors))
	for _, u := range res.Uploaded {
		fmt.Fprintf(&text, "%s (%s) <- %s\n", u.Path, byteSize(int(u.SizeBytes)), u.SourceURL)
	}
	if len(res.Errors) > 0 {
		text.WriteString("Failed:\n")
	}
	for _, e := range res.Errors {
		fmt.Fprintf(&text, "%s: %s\n", e.SourceURL, e.Error)
	}
	return &mcp.CallToolResult{
		IsError: res.Status == session.URLUploadFailure,
		Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimRight(text.String(), "\n")}},
	}
}
