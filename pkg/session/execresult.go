package session

// ExecRequest is one piece of code to run in a session's kernel.
type ExecRequest struct {
	Code        string
	TimeoutSecs int
	Envs        map[string]string
	// Context names a kernel context other than the default one.
	Context string
}

// ExecResult is the outcome of an execution, as the API returns it.
type ExecResult struct {
	Success        bool       `json:"success"`
	Stdout         string     `json:"stdout"`
	Stderr         string     `json:"stderr"`
	Results        []Result   `json:"results"`
	Error          *ExecError `json:"error,omitempty"`
	ExecutionCount int        `json:"executionCount,omitempty"`
	DurationMs     int64      `json:"durationMs"`
	// Truncated is set when output was cut: stdout or stderr past the
	// output limit, an oversized exception, or rich results past their
	// budget (the largest cut to their text, or left out).
	Truncated bool `json:"truncated"`
	// Restarted is set when the session's sandbox was gone and a fresh one
	// was started for this call: kernel state from before is lost.
	Restarted bool `json:"restarted"`
	// KernelRestarted is set whenever kernel state from before this call
	// is gone: the sandbox was replaced (Restarted), or its kernel died or
	// was replaced during this execution (it would not stop at a timeout),
	// or (local runtime) it was killed, restarted or deleted since the last
	// execution and replaced for this one.
	KernelRestarted bool `json:"kernelRestarted"`
	// TimedOut is set when the code ran past its timeout and was stopped:
	// Error is then a TimeoutError whose value names the limit and says
	// whether the kernel's state survived, and the output is what arrived
	// before. A timeout is a result, not an error.
	TimedOut bool `json:"timedOut"`
	// Restored says what the fresh sandbox got back from the session's
	// workspace, when this call started one that restored files.
	Restored  *RestoreInfo `json:"restored,omitempty"`
	Artifacts []Artifact   `json:"artifacts,omitempty"`
	// ChangedFiles are the files the execution created or changed in
	// WorkDir and the directories right below it (dot names left out), as
	// a provider that tracks them reports with the result; set only when
	// ChangedFilesReported. Artifacts then come from this list instead of a
	// listing of WorkDir after the execution. Not part of the API.
	ChangedFiles         []FileEntry `json:"-"`
	ChangedFilesReported bool        `json:"-"`
	// KernelLost is set by a provider whose kernel was replaced to stop
	// this execution; the Manager folds it into KernelRestarted. Not part
	// of the API.
	KernelLost bool `json:"-"`
}

// Result is one rich output of an execution: the last expression's value
// (IsMainResult) or something displayed along the way. Every MIME
// representation the kernel produced is kept.
type Result struct {
	Text         string         `json:"text,omitempty"`
	HTML         string         `json:"html,omitempty"`
	Markdown     string         `json:"markdown,omitempty"`
	SVG          string         `json:"svg,omitempty"`
	PNG          string         `json:"png,omitempty"`  // base64
	JPEG         string         `json:"jpeg,omitempty"` // base64
	PDF          string         `json:"pdf,omitempty"`  // base64
	LaTeX        string         `json:"latex,omitempty"`
	JSON         map[string]any `json:"json,omitempty"`
	JavaScript   string         `json:"javascript,omitempty"`
	Data         map[string]any `json:"data,omitempty"`
	Chart        map[string]any `json:"chart,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
	IsMainResult bool           `json:"isMainResult"`
}

// ExecError is an exception raised by the executed code.
type ExecError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// Artifact is a file the execution created or changed in the working
// directory, with a URL to fetch it.
type Artifact struct {
	Path        string `json:"path"`
	SizeBytes   int64  `json:"sizeBytes"`
	MimeType    string `json:"mimeType,omitempty"`
	DownloadURL string `json:"downloadUrl,omitempty"`
}

// Event is one piece of live output of an execution or an install, sent to
// a streaming caller as it happens. Exactly one field is set.
type Event struct {
	// Started marks the moment the call reached its sandbox, before any
	// output: failures before it (bad input, limits, a sandbox that would
	// not start) have happened by then. A call moved to a fresh sandbox
	// before any output may send it again.
	Started bool `json:"-"`

	Stdout string     `json:"stdout,omitempty"`
	Stderr string     `json:"stderr,omitempty"`
	Result *Result    `json:"result,omitempty"`
	Error  *ExecError `json:"error,omitempty"`
}
