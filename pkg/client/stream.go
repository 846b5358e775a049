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

// readStream passes each line's output to onEvent and joins them into the
// whole result: the done line carries only the summary.
func readStream(r io.Reader, onEvent func(session.Event)) (*session.ExecResult, error) {
	sc := bufio.NewScanner(r)
	// A line can hold a rich result with images: allow large lines.
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var stdout, stderr strings.Builder
	var results []session.Result
	var execErr *session.ExecError
	for sc.Scan() {
		var line streamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("read stream: %w", err)
		}
		switch line.Type {
		case "stdout":
			stdout.WriteString(line.Text)
			onEvent(session.Event{Stdout: line.Text})
		case "stderr":
			stderr.WriteString(line.Text)
			onEvent(session.Event{Stderr: line.Text})
		case "result":
			if line.Result == nil {
				return nil, errors.New("read stream: a result line without its result")
			}
			results = append(results, *line.Result)
			onEvent(session.Event{Result: line.Result})
		case "error":
			execErr = line.Error
			onEvent(session.Event{Error: line.Error})
		case "failure":
			if line.Problem == nil {
				return nil, errors.New("read stream: a failure line without its problem")
			}
			return nil, line.Problem
		case "done":
			var res session.ExecResult
			if err := json.Unmarshal(line.Summary, &res); err != nil {
				return nil, fmt.Errorf("read stream end: %w", err)
			}
			res.Stdout, res.Stderr, res.Error = stdout.String(), stderr.String(), execErr
			res.Results = results
			if res.Results == nil {
				res.Results = []session.Result{}
			}
			return &res, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	return nil, errNoEnd
}
