package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"
)

// CodeContext is an interpreter session (a Jupyter-style kernel) whose
// variables persist across RunCode calls.
type CodeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// RunCodeOptions tune RunCode.
type RunCodeOptions struct {
	// ContextID runs the code in that context. Mutually exclusive with Language.
	ContextID string
	// Language runs the code in the default context of that language
	// ("python" when both are empty).
	Language string
	// Envs are environment variables for this execution only.
	Envs map[string]string
	// Timeout bounds the code's run; zero means DefaultRunCodeTimeout,
	// negative no limit. The interpreter is asked to interrupt the code
	// when it elapses (a sessionbox extension E2B's interpreter ignores)
	// and then ends the stream with a TimeoutError; if it has not ended the
	// stream InterruptGrace later, RunCode hangs up, which makes E2B's
	// interpreter interrupt the kernel. Either way the Execution holds the
	// output that arrived, with TimedOut set: a timeout is a result, not an
	// error. The wait for the response to begin is bounded by the client's
	// request timeout.
	Timeout time.Duration
	// InterruptGrace is how long past Timeout RunCode waits for the
	// interpreter to end a timed-out execution itself; zero means
	// DefaultInterruptGrace.
	InterruptGrace time.Duration
	// Live callbacks, called on the caller's goroutine as lines arrive.
	OnStdout func(OutputMessage)
	OnStderr func(OutputMessage)
	OnResult func(Result)
	OnError  func(ExecutionError)
	// MaxOutputBytes overrides Config.MaxOutputBytes for this execution:
	// Logs keep the first MaxOutputBytes bytes of text and Results the
	// results that fit in MaxOutputBytes of JSON; negative means no limit.
	// The callbacks still receive everything they are given, but one line
	// of the stream longer than max(MaxOutputBytes, DefaultMaxOutputBytes)
	// (unbounded when the limit is negative) is never read into memory:
	// RunCode then stops and returns what it had so far with an error
	// matching ErrOutputTooLarge.
	MaxOutputBytes int
}

// OutputMessage is one chunk of stdout or stderr.
type OutputMessage struct {
	Text      string
	Timestamp time.Time
	IsStderr  bool
}

// Logs are the textual outputs of an execution, in arrival order.
type Logs struct {
	Stdout []string
	Stderr []string
}

// ExecutionError is an exception raised by the executed code.
type ExecutionError struct {
	Name  string
	Value string
	// Traceback is the formatted traceback (may contain ANSI colour codes).
	Traceback string
}

func (e *ExecutionError) Error() string { return e.Name + ": " + e.Value }

// Execution is the outcome of RunCode. An exception in the code is reported
// in Error, not as a Go error.
type Execution struct {
	Results        []Result
	Logs           Logs
	Error          *ExecutionError
	ExecutionCount int
	// Truncated is set when Logs or Results lack output that went past the
	// output limit (RunCodeOptions.MaxOutputBytes); the first output is kept.
	Truncated bool
	// ChangedFiles are the regular files the execution created or changed
	// in ChangedFilesDir (its context's working directory) and the
	// directories right below it, as an interpreter that tracks them
	// reports in a "files_changed" line (a sessionbox extension; E2B's
	// interpreter sends none). Dot files and directories are left out.
	// Only meaningful when ChangedFilesReported is set.
	ChangedFiles    []EntryInfo
	ChangedFilesDir string
	// ChangedFilesReported is set when the interpreter sent a complete
	// files_changed line; otherwise the caller has to list the directory.
	ChangedFilesReported bool
	// TimedOut is set when the execution ran past RunCodeOptions.Timeout
	// and was stopped; Error is then a TimeoutError saying how.
	TimedOut bool
	// KernelRestarted is set when the interpreter replaced the kernel to
	// stop a timed-out execution, or found it dead (killed between calls)
	// and started a fresh one for this execution: its variables are gone.
	// Only sessionbox's local interpreter says so; E2B's does not.
	KernelRestarted bool
}

// Text returns the text of the main result (the value of the last
// expression), or "" when there is none.
func (e *Execution) Text() string {
	for _, r := range e.Results {
		if r.IsMainResult {
			return r.Text
		}
	}
	return ""
}

// RunCode executes code in the sandbox's code interpreter and collects its
// output, calling the live callbacks as the NDJSON stream is parsed. It is
// never retried. ctx and opts.Timeout bound the execution.
func (s *Sandbox) RunCode(ctx context.Context, code string, opts RunCodeOptions) (*Execution, error) {
	const op = "interpreter.runCode"
	if opts.ContextID != "" && opts.Language != "" {
		return nil, &Error{Op: op, Message: "ContextID and Language are mutually exclusive", kinds: []error{ErrInvalidArgument}}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultRunCodeTimeout
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	eb := executeBody{Code: code, ContextID: opts.ContextID, Language: opts.Language, EnvVars: opts.Envs}
	grace := opts.InterruptGrace
	if grace <= 0 {
		grace = DefaultInterruptGrace
	}
	if timeout > 0 {
		secs := timeout.Seconds()
		eb.Timeout = &secs
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, timeout+grace, errRunTimeout)
		defer stop()
	}
	body, err := json.Marshal(eb)
	if err != nil {
		return nil, fmt.Errorf("e2b: %s: %w", op, err)
	}
	req, err := s.interp.request(ctx, http.MethodPost, "/execute", bytes.NewReader(body))
	if err != nil {
		return nil, wrapErr(op, s.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	timer := s.client.startStreamTimer(cancel)
	resp, err := s.interp.http.Do(req)
	timer.stop()
	if err != nil {
		if hungUp(parent, ctx) {
			return hangUpResult(&Execution{}, &opts, timeout, grace), nil
		}
		if timer.timedOut() {
			return nil, timeoutErr(op, s.ID, err)
		}
		return nil, wrapErr(op, s.ID, err)
	}
	if resp.StatusCode >= 300 {
		defer drainClose(resp.Body)
		return nil, envdError(op, s.ID, resp)
	}
	exec := &Execution{}
	if err := parseExecution(resp.Body, exec, &opts, s.client.outputLimit(opts.MaxOutputBytes)); err != nil {
		resp.Body.Close() // the stream may still be live: do not wait for it
		if hungUp(parent, ctx) {
			return hangUpResult(exec, &opts, timeout, grace), nil
		}
		return exec, wrapErr(op, s.ID, err)
	}
	drainClose(resp.Body)
	return exec, nil
}

// errRunTimeout is the cause of RunCode giving up on an interpreter that
// did not end a timed-out execution.
var errRunTimeout = errors.New("execution timeout")

// hungUp reports whether RunCode's own deadline, not the caller, ended the
// call.
func hungUp(parent, ctx context.Context) bool {
	return parent.Err() == nil && errors.Is(context.Cause(ctx), errRunTimeout)
}

// hangUpResult makes a timeout result of what arrived before RunCode hung
// up. Whether the kernel stopped is not known here: hanging up makes E2B's
// interpreter interrupt it, which keeps its state if the code obeys.
func hangUpResult(exec *Execution, opts *RunCodeOptions, timeout, grace time.Duration) *Execution {
	exec.TimedOut = true
	exec.Error = &ExecutionError{Name: "TimeoutError", Value: fmt.Sprintf(
		"execution exceeded its timeout of %s; the interpreter did not end it within %s, so the connection was closed, which interrupts the kernel", seconds(timeout), seconds(grace))}
	if opts.OnError != nil {
		opts.OnError(*exec.Error)
	}
	return exec
}

// seconds renders a duration as people write a timeout: "1 s", "0.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

type executeBody struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id,omitempty"`
	Language  string            `json:"language,omitempty"`
	EnvVars   map[string]string `json:"env_vars,omitempty"`
	// Timeout (seconds) is a sessionbox extension: the local runtime's
	// interpreter interrupts the code when it elapses.
	Timeout *float64 `json:"timeout,omitempty"`
}

// executionLine is one NDJSON line of /execute; which fields are set
// depends on Type.
type executionLine struct {
	Type           string `json:"type"`
	ExecutionCount int    `json:"execution_count"`
	Timestamp      string `json:"timestamp"`
	Name           string `json:"name"`
	Value          string `json:"value"`
	Traceback      string `json:"traceback"`
	// Files is decoded only for files_changed, so that a malformed list
	// costs the report, not the execution.
	Files    json.RawMessage `json:"files"`
	Root     string          `json:"root"`
	Complete bool            `json:"complete"`
	// TimedOut and KernelRestarted are sessionbox extensions of an error
	// line: the code ran past its timeout, and the kernel was replaced to
	// stop it. KernelRestarted on the count line says the kernel was found
	// dead and replaced before this execution.
	TimedOut        bool `json:"timed_out"`
	KernelRestarted bool `json:"kernel_restarted"`
	Result
}

// changedFile is one entry of a files_changed line.
type changedFile struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// executionParser folds the NDJSON lines of one execution into an
// Execution, keeping logs and results within their budgets.
type executionParser struct {
	exec          *Execution
	opts          *RunCodeOptions
	logs, results budget
}

// parseExecution consumes the stream line by line as it arrives, so
// callbacks fire while the code is still running. The stream must end with
// end_of_execution; anything else means it was cut short. keep bounds what
// exec holds (negative: unlimited).
func parseExecution(r io.Reader, exec *Execution, opts *RunCodeOptions, keep int) error {
	lineMax := -1
	if keep >= 0 {
		lineMax = max(keep, DefaultMaxOutputBytes)
	}
	lines := newLineReader(r, lineMax)
	defer lines.release()
	p := &executionParser{exec: exec, opts: opts, logs: budget{max: keep}, results: budget{max: keep}}
	for {
		raw, err := lines.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("stream ended before end_of_execution: %w", io.ErrUnexpectedEOF)
			}
			return err
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var line executionLine
		if err := json.Unmarshal(raw, &line); err != nil {
			return fmt.Errorf("decode execution line: %w", err)
		}
		if line.Type == "end_of_execution" {
			return nil
		}
		p.apply(&line, len(raw))
	}
}

// apply records one line; size is its length on the wire, the measure of
// what a result costs to keep.
func (p *executionParser) apply(line *executionLine, size int) {
	exec, opts := p.exec, p.opts
	switch line.Type {
	case "stdout", "stderr":
		msg := OutputMessage{Text: line.Text, IsStderr: line.Type == "stderr"}
		msg.Timestamp, _ = time.Parse(time.RFC3339Nano, line.Timestamp)
		p.keepLog(msg)
		if msg.IsStderr && opts.OnStderr != nil {
			opts.OnStderr(msg)
		}
		if !msg.IsStderr && opts.OnStdout != nil {
			opts.OnStdout(msg)
		}
	case "result":
		if p.results.take(size) {
			exec.Results = append(exec.Results, line.Result)
		} else {
			exec.Truncated = true
		}
		if opts.OnResult != nil {
			opts.OnResult(line.Result)
		}
	case "error":
		exec.Error = &ExecutionError{Name: line.Name, Value: line.Value, Traceback: line.Traceback}
		exec.TimedOut, exec.KernelRestarted = line.TimedOut, line.KernelRestarted
		if opts.OnError != nil {
			opts.OnError(*exec.Error)
		}
	case "number_of_executions":
		exec.ExecutionCount = line.ExecutionCount
		exec.KernelRestarted = exec.KernelRestarted || line.KernelRestarted
	case "files_changed":
		p.changedFiles(line)
	}
}

// changedFiles records a complete files_changed line; an incomplete one
// says nothing reliable, so it leaves the execution unreported.
func (p *executionParser) changedFiles(line *executionLine) {
	var list []changedFile
	if !line.Complete || line.Root == "" || json.Unmarshal(line.Files, &list) != nil {
		return
	}
	files := make([]EntryInfo, len(list))
	for i, f := range list {
		files[i] = EntryInfo{Name: path.Base(f.Path), Path: f.Path, Type: FileTypeFile, Size: f.Size, ModifiedTime: f.Modified}
	}
	p.exec.ChangedFiles = files
	p.exec.ChangedFilesDir = line.Root
	p.exec.ChangedFilesReported = true
}

// keepLog appends as much of msg's text as the log budget allows.
func (p *executionParser) keepLog(msg OutputMessage) {
	text := p.logs.fit(msg.Text)
	if len(text) < len(msg.Text) {
		p.exec.Truncated = true
	}
	if text == "" && msg.Text != "" {
		return
	}
	if msg.IsStderr {
		p.exec.Logs.Stderr = append(p.exec.Logs.Stderr, text)
	} else {
		p.exec.Logs.Stdout = append(p.exec.Logs.Stdout, text)
	}
}

// CreateContextOptions tune CreateContext.
type CreateContextOptions struct {
	// Language of the context, "python" when empty.
	Language string
	// Cwd is the working directory, /home/user when empty.
	Cwd string
}

// CreateContext starts a new interpreter context. Not retried.
func (s *Sandbox) CreateContext(ctx context.Context, opts CreateContextOptions) (*CodeContext, error) {
	body := map[string]string{}
	if opts.Language != "" {
		body["language"] = opts.Language
	}
	if opts.Cwd != "" {
		body["cwd"] = opts.Cwd
	}
	var out CodeContext
	if err := s.interpCall(ctx, "interpreter.createContext", http.MethodPost, "/contexts", body, false, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListContexts returns the interpreter's contexts.
func (s *Sandbox) ListContexts(ctx context.Context) ([]CodeContext, error) {
	var out []CodeContext
	if err := s.interpCall(ctx, "interpreter.listContexts", http.MethodGet, "/contexts", nil, true, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// RestartContext restarts a context's kernel, clearing its state.
func (s *Sandbox) RestartContext(ctx context.Context, id string) error {
	return s.interpCall(ctx, "interpreter.restartContext", http.MethodPost, "/contexts/"+url.PathEscape(id)+"/restart", nil, false, nil)
}

// RemoveContext shuts a context down.
func (s *Sandbox) RemoveContext(ctx context.Context, id string) error {
	return s.interpCall(ctx, "interpreter.removeContext", http.MethodDelete, "/contexts/"+url.PathEscape(id), nil, true, nil)
}

// interpCall is a small JSON request to the interpreter.
func (s *Sandbox) interpCall(ctx context.Context, op, method, path string, in any, idempotent bool, out any) error {
	var payload []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("e2b: %s: %w", op, err)
		}
		payload = b
	}
	err := s.client.withRetry(ctx, idempotent, func(ctx context.Context) error {
		ctx, cancel := s.client.requestContext(ctx)
		defer cancel()
		var body io.Reader
		if payload != nil {
			body = bytes.NewReader(payload)
		}
		req, err := s.interp.request(ctx, method, path, body)
		if err != nil {
			return err
		}
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.interp.http.Do(req)
		if err != nil {
			return err
		}
		defer drainClose(resp.Body)
		if resp.StatusCode >= 300 {
			return envdError(op, s.ID, resp)
		}
		if out == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
			return nil
		}
		return json.NewDecoder(io.LimitReader(resp.Body, maxAPIBody)).Decode(out)
	})
	return wrapErr(op, s.ID, err)
}
