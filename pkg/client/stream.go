package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// streamLine is one NDJSON line of a streamed execution.
type streamLine struct {
	Type    string             `json:"type"`
	Text    string             `json:"text"`
	Result  *session.Result    `json:"result"`
	Error   *session.ExecError `json:"error"`
	Summary json.RawMessage    `json:"summary"`
	Problem *Problem           `json:"problem"`
}

// errNoEnd says the stream ended without its last line: the connection
// broke or the server gave up midway.
var errNoEnd = errors.New("the stream ended before the execution did")

// streamed is what a stream's lines carried before its done line.
type streamed struct {
	stdout, stderr strings.Builder
	results        []session.Result
	err            *session.ExecError
}

// readLines passes each line's output to onEvent and gathers it, until the
// done line, whose summary it returns, or the failure line, which it
// returns as a *Problem.
func readLines(r io.Reader, onEvent func(session.Event)) (*streamed, json.RawMessage, error) {
	if onEvent == nil {
		onEvent = func(session.Event) {}
	}
	sc := bufio.NewScanner(r)
	// A line can hold a rich result with images: allow large lines.
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var got streamed
	for sc.Scan() {
		var line streamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, nil, fmt.Errorf("read stream: %w", err)
		}
		switch line.Type {
		case "stdout":
			got.stdout.WriteString(line.Text)
			onEvent(session.Event{Stdout: line.Text})
		case "stderr":
			got.stderr.WriteString(line.Text)
			onEvent(session.Event{Stderr: line.Text})
		case "result":
			if line.Result == nil {
				return nil, nil, errors.New("read stream: a result line without its result")
			}
			got.results = append(got.results, *line.Result)
			onEvent(session.Event{Result: line.Result})
		case "error":
			got.err = line.Error
			onEvent(session.Event{Error: line.Error})
		case "failure":
			if line.Problem == nil {
				return nil, nil, errors.New("read stream: a failure line without its problem")
			}
			return nil, nil, line.Problem
		case "done":
			return &got, line.Summary, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read stream: %w", err)
	}
	return nil, nil, errNoEnd
}

// readStream reads an execution's stream and joins its lines into the
// whole result: the done line carries only the summary.
func readStream(r io.Reader, onEvent func(session.Event)) (*session.ExecResult, error) {
	got, summary, err := readLines(r, onEvent)
	if err != nil {
		return nil, err
	}
	var res session.ExecResult
	if err := json.Unmarshal(summary, &res); err != nil {
		return nil, fmt.Errorf("read stream end: %w", err)
	}
	res.Stdout, res.Stderr, res.Error = got.stdout.String(), got.stderr.String(), got.err
	res.Results = got.results
	if res.Results == nil {
		res.Results = []session.Result{}
	}
	return &res, nil
}

// readInstallStream reads an install's stream: pip's output, then the
// summary.
func readInstallStream(r io.Reader, onEvent func(session.Event)) (*session.InstallResult, error) {
	got, summary, err := readLines(r, onEvent)
	if err != nil {
		return nil, err
	}
	var out struct {
		Success    bool                 `json:"success"`
		ExitCode   int                  `json:"exitCode"`
		DurationMs int64                `json:"durationMs"`
		Truncated  bool                 `json:"truncated"`
		Restarted  bool                 `json:"restarted"`
		Restored   *session.RestoreInfo `json:"restored"`
	}
	if err := json.Unmarshal(summary, &out); err != nil {
		return nil, fmt.Errorf("read stream end: %w", err)
	}
	return &session.InstallResult{Success: out.Success, ExitCode: out.ExitCode, Stdout: got.stdout.String(),
		Stderr: got.stderr.String(), DurationMs: out.DurationMs, Truncated: out.Truncated, Restarted: out.Restarted,
		Restored: out.Restored}, nil
}
