package api

import "github.com/sessionbox/sessionbox/pkg/session"

// execSummary is an execution's outcome as a stream's done line carries
// it: everything but the output, results and exception the lines before
// it already carried, so a large image travels once.
type execSummary struct {
	Success         bool                 `json:"success"`
	ExecutionCount  int                  `json:"executionCount,omitempty"`
	DurationMs      int64                `json:"durationMs"`
	Truncated       bool                 `json:"truncated"`
	Restarted       bool                 `json:"restarted"`
	KernelRestarted bool                 `json:"kernelRestarted"`
	TimedOut        bool                 `json:"timedOut"`
	Artifacts       []session.Artifact   `json:"artifacts,omitempty"`
	Restored        *session.RestoreInfo `json:"restored,omitempty"`
}

// execOutcome is how a stream ends an execution.
func execOutcome(res *session.ExecResult) streamOutcome {
	if res == nil {
		return streamOutcome{}
	}
	return streamOutcome{
		stdout: res.Stdout, stderr: res.Stderr, results: res.Results, err: res.Error,
		summary: execSummary{
			Success: res.Success, ExecutionCount: res.ExecutionCount, DurationMs: res.DurationMs,
			Truncated: res.Truncated, Restarted: res.Restarted, KernelRestarted: res.KernelRestarted,
			TimedOut: res.TimedOut, Artifacts: res.Artifacts, Restored: res.Restored,
		},
	}
}

// installSummary is an install's outcome as a stream's done line carries
// it: pip's output went out as lines before it.
type installSummary struct {
	Success    bool                 `json:"success"`
	ExitCode   int                  `json:"exitCode"`
	DurationMs int64                `json:"durationMs"`
	Truncated  bool                 `json:"truncated"`
	Restarted  bool                 `json:"restarted"`
	Restored   *session.RestoreInfo `json:"restored,omitempty"`
}

// installOutcome is how a stream ends an install.
func installOutcome(res *session.InstallResult) streamOutcome {
	if res == nil {
		return streamOutcome{}
	}
	return streamOutcome{
		stdout: res.Stdout, stderr: res.Stderr,
		summary: installSummary{Success: res.Success, ExitCode: res.ExitCode, DurationMs: res.DurationMs,
			Truncated: res.Truncated, Restarted: res.Restarted, Restored: res.Restored},
	}
}

// commandSummary is a shell command's outcome as a stream's done line
// carries it: its output and a timeout's error went out as lines before it.
type commandSummary struct {
	CommandID  string               `json:"commandId,omitempty"`
	ExitCode   int                  `json:"exitCode"`
	DurationMs int64                `json:"durationMs"`
	Truncated  bool                 `json:"truncated"`
	TimedOut   bool                 `json:"timedOut"`
	Restarted  bool                 `json:"restarted"`
	Restored   *session.RestoreInfo `json:"restored,omitempty"`
}

// commandOutcome is how a stream ends a shell command.
func commandOutcome(res *session.CommandResult) streamOutcome {
	if res == nil {
		return streamOutcome{}
	}
	return streamOutcome{
		stdout: res.Stdout, stderr: res.Stderr, err: res.Error,
		summary: commandSummary{CommandID: res.CommandID, ExitCode: res.ExitCode, DurationMs: res.DurationMs,
			Truncated: res.Truncated, TimedOut: res.TimedOut, Restarted: res.Restarted, Restored: res.Restored},
	}
}
