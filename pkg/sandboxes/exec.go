package sandboxes

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// Execute runs code in the sandbox's kernel. The e2b client never retries a
// code execution, so the code runs at most once.
func (a *E2B) Execute(ctx context.Context, id string, req session.ExecRequest, onEvent func(session.Event)) (*session.ExecResult, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return nil, err
	}
	emit := func(e session.Event) {
		if onEvent != nil {
			onEvent(e)
		}
	}
	opts := e2b.RunCodeOptions{
		ContextID: req.Context,
		Envs:      req.Envs,
		Timeout:   time.Duration(req.TimeoutSecs) * time.Second,
		OnStdout:  func(m e2b.OutputMessage) { emit(session.Event{Stdout: m.Text}) },
		OnStderr:  func(m e2b.OutputMessage) { emit(session.Event{Stderr: m.Text}) },
		OnResult: func(r e2b.Result) {
			res := resultFrom(r)
			emit(session.Event{Result: &res})
		},
		OnError: func(e e2b.ExecutionError) {
			emit(session.Event{Error: &session.ExecError{Name: e.Name, Value: e.Value, Traceback: e.Traceback}})
		},
	}
	started := time.Now()
	ex, err := sb.RunCode(ctx, req.Code, opts)
	if err != nil {
		return nil, domainError("run code", err)
	}
	out := &session.ExecResult{
		Success:        ex.Error == nil,
		Stdout:         strings.Join(ex.Logs.Stdout, ""),
		Stderr:         strings.Join(ex.Logs.Stderr, ""),
		ExecutionCount: ex.ExecutionCount,
		DurationMs:     time.Since(started).Milliseconds(),
		Results:        make([]session.Result, 0, len(ex.Results)),
		TimedOut:       ex.TimedOut,
		KernelLost:     ex.KernelRestarted,
	}
	for _, r := range ex.Results {
		out.Results = append(out.Results, resultFrom(r))
	}
	if ex.Error != nil {
		out.Error = &session.ExecError{Name: ex.Error.Name, Value: ex.Error.Value, Traceback: ex.Error.Traceback}
	}
	// A report for another directory (a context with its own cwd) says
	// nothing about the working directory the session's artifacts come from.
	if ex.ChangedFilesReported && ex.ChangedFilesDir == session.WorkDir {
		out.ChangedFilesReported = true
		out.ChangedFiles = make([]session.FileEntry, len(ex.ChangedFiles))
		for i, e := range ex.ChangedFiles {
			out.ChangedFiles[i] = entryFrom(e)
		}
	}
	return out, nil
}

func resultFrom(r e2b.Result) session.Result {
	out := session.Result{
		Text: r.Text, HTML: r.HTML, Markdown: r.Markdown, SVG: r.SVG, PNG: r.PNG, JPEG: r.JPEG,
		PDF: r.PDF, LaTeX: r.LaTeX, JavaScript: r.JavaScript, Data: r.Data, Chart: r.Chart,
		Extra: r.Extra, IsMainResult: r.IsMainResult,
	}
	switch j := r.JSON.(type) {
	case map[string]any:
		out.JSON = j
	case nil:
	default:
		// The domain keeps JSON results as objects; other JSON values
		// travel wrapped so nothing is lost.
		out.JSON = map[string]any{"value": j}
	}
	return out
}

// ResetKernel restarts the sandbox's kernel contexts: variables go, files stay.
func (a *E2B) ResetKernel(ctx context.Context, id string) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	contexts, err := sb.ListContexts(ctx)
	if err != nil {
		return domainError("list kernel contexts", err)
	}
	for _, c := range contexts {
		if err := sb.RestartContext(ctx, c.ID); err != nil {
			return domainError("restart kernel context", err)
		}
	}
	return nil
}

// RunProgram runs argv with no shell (session.ProgramRunner); a non-zero
// exit is a result, not an error. Output past maxOutput bytes is dropped.
func (a *E2B) RunProgram(ctx context.Context, id string, argv []string, timeout time.Duration, maxOutput int) (session.ShellOutcome, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.ShellOutcome{}, err
	}
	res, err := sb.Commands().Exec(ctx, argv, e2b.CommandOptions{Timeout: timeout, MaxOutputBytes: maxOutput})
	var exit *e2b.CommandExitError
	if err != nil && !errors.As(err, &exit) || res == nil {
		return session.ShellOutcome{}, domainError("run program", err)
	}
	return session.ShellOutcome{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}, nil
}

// RunCommand runs a shell command; a non-zero exit is a result, not an error.
func (a *E2B) RunCommand(ctx context.Context, id string, cmd string, timeout time.Duration, onEvent func(session.Event)) (session.ShellOutcome, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.ShellOutcome{}, err
	}
	opts := e2b.CommandOptions{Timeout: timeout}
	if onEvent != nil {
		opts.OnStdout = func(b []byte) { onEvent(session.Event{Stdout: string(b)}) }
		opts.OnStderr = func(b []byte) { onEvent(session.Event{Stderr: string(b)}) }
	}
	res, err := sb.Commands().Run(ctx, cmd, opts)
	var exit *e2b.CommandExitError
	if err != nil && !errors.As(err, &exit) {
		return session.ShellOutcome{}, domainError("run command", err)
	}
	if res == nil {
		return session.ShellOutcome{}, domainError("run command", err)
	}
	return session.ShellOutcome{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}, nil
}

// ListFiles lists dir to the given depth.
func (a *E2B) ListFiles(ctx context.Context, id, dir string, depth int) ([]session.FileEntry, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return nil, err
	}
	entries, err := sb.Files().List(ctx, dir, e2b.ListOptions{Depth: depth})
	if err != nil {
		return nil, noDir(domainError("list "+dir, err))
	}
	out := make([]session.FileEntry, len(entries))
	for i, e := range entries {
		out[i] = entryFrom(e)
	}
	return out, nil
}

// StatFile describes one file or directory.
func (a *E2B) StatFile(ctx context.Context, id, path string) (session.FileEntry, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.FileEntry{}, err
	}
	e, err := sb.Files().Stat(ctx, path, e2b.FileOptions{})
	if err != nil {
		return session.FileEntry{}, domainError(path, err)
	}
	return entryFrom(*e), nil
}

// ReadFile streams a file out of the sandbox.
func (a *E2B) ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := sb.Files().Read(ctx, path, e2b.ReadOptions{})
	if err != nil {
		return nil, domainError("read "+path, err)
	}
	return r, nil
}

// WriteFile streams r into the sandbox at path.
func (a *E2B) WriteFile(ctx context.Context, id, path string, r io.Reader) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	_, err = sb.Files().Write(ctx, path, r, e2b.WriteOptions{})
	return domainError("write "+path, err)
}

// RemoveFile removes a file or a directory tree.
func (a *E2B) RemoveFile(ctx context.Context, id, path string) error {
	sb, err := a.handle(ctx, id)
	if err != nil {
		return err
	}
	return domainError("delete "+path, sb.Files().Remove(ctx, path, e2b.FileOptions{}))
}

func entryFrom(e e2b.EntryInfo) session.FileEntry {
	return session.FileEntry{Name: e.Name, Path: e.Path, Type: string(e.Type), Size: e.Size, ModifiedAt: e.ModifiedTime}
}
