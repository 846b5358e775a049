package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// The structured results, declared as each tool's outputSchema. They hold
// what a program acts on (success, exit code, flags, counts) and never the
// output itself, which the text already carries: a model reads both.

// ExecOutput is execute_python's structured result.
type ExecOutput struct {
	Success         bool `json:"success" jsonschema:"the code ran to its end without an exception"`
	TimedOut        bool `json:"timedOut" jsonschema:"the code was interrupted at its time limit"`
	Truncated       bool `json:"truncated" jsonschema:"the service cut stdout or stderr at its limit"`
	Restarted       bool `json:"restarted" jsonschema:"the sandbox was replaced before the code ran"`
	KernelRestarted bool `json:"kernelRestarted" jsonschema:"the kernel restarted: earlier variables are gone"`
	Images          int  `json:"images" jsonschema:"image blocks in the content"`
	Artifacts       int  `json:"artifacts" jsonschema:"files the code wrote, as resource links in the content"`
}

// CommandOutput is run_command's structured result.
type CommandOutput struct {
	ExitCode  int  `json:"exitCode" jsonschema:"the command's exit code (-1 when it was killed at its time limit)"`
	TimedOut  bool `json:"timedOut" jsonschema:"the command was killed at its time limit"`
	Truncated bool `json:"truncated" jsonschema:"the service cut stdout or stderr at its limit"`
	Restarted bool `json:"restarted" jsonschema:"the sandbox was replaced before the command ran"`
}

// WriteOutput is write_file's structured result.
type WriteOutput struct {
	Path string `json:"path" jsonschema:"the file's absolute path"`
	Size int64  `json:"size" jsonschema:"the file's size in bytes"`
}

// UploadURLsOutput is upload_files_from_urls' structured result; the text
// lists each file and each refusal.
type UploadURLsOutput struct {
	Status   session.URLUploadStatus `json:"status" jsonschema:"success, partial or failure"`
	Uploaded int                     `json:"uploaded" jsonschema:"URLs fetched into the sandbox"`
	Failed   int                     `json:"failed" jsonschema:"URLs refused or failed"`
}

func execOutput(res *session.ExecResult, r *mcp.CallToolResult) *ExecOutput {
	images := 0
	for _, c := range r.Content {
		if _, ok := c.(*mcp.ImageContent); ok {
			images++
		}
	}
	return &ExecOutput{Success: res.Success && res.Error == nil, TimedOut: res.TimedOut, Truncated: res.Truncated,
		Restarted: res.Restarted, KernelRestarted: res.KernelRestarted, Images: images, Artifacts: len(res.Artifacts)}
}

func commandOutput(res *session.CommandResult) *CommandOutput {
	return &CommandOutput{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Truncated: res.Truncated, Restarted: res.Restarted}
}

func uploadURLsOutput(res *session.URLUploadResult) *UploadURLsOutput {
	return &UploadURLsOutput{Status: res.Status, Uploaded: len(res.Uploaded), Failed: len(res.Errors)}
}
