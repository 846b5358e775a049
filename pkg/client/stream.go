package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// streamLine is one NDJSON line of a streamed execution.
type streamLine struct {
	Type    string             `json:"type"`
	Text    string             `json:"text"`
	Result  json.RawMessage    `json:"result"`
	Error   *session.ExecError `json:"error"`
	Problem *Problem           `json:"problem"`
}

// errNoEnd says the stream ended without its last line: the connection
// broke or the server gave up midway.
var errNoEnd = errors.New("the stream ended before the execution did")

func readStream(r io.Reader, onEvent func(session.Event)) (*session.ExecResult, error) {
	sc := bufio.NewScanner(r)
	// A line can hold a whole result with images: allow large lines.
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var line streamLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("read stream: %w", err)
		}
		switch line.Type {
		case "stdout":
			onEvent(session.Event{Stdout: line.Text})
		case "stderr":
			onEvent(session.Event{Stderr: line.Text})
		case "result":
			var res session.Result
			if err := json.Unmarshal(line.Result, &res); err != nil {
				return nil, fmt.Errorf("read stream result: %w", err)
			}
			onEvent(session.Event{Result: &res})
		case "error":
			if line.Problem != nil {
				return nil, line.Problem
			}
			onEvent(session.Event{Error: line.Error})
		case "done":
			var res session.ExecResult
			if err := json.Unmarshal(line.Result, &res); err != nil {
				return nil, fmt.Errorf("read stream end: %w", err)
			}
			return &res, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	return nil, errNoEnd
}
