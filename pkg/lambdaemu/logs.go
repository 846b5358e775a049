package lambdaemu

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// logLevels are Lambda's application log levels, least severe first.
var logLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}

// levelRank is the position of level in logLevels, or -1 when it is none.
func levelRank(level string) int {
	level = strings.ToUpper(strings.TrimSpace(level))
	for i, l := range logLevels {
		if l == level {
			return i
		}
	}
	return -1
}

// LineLevel is the level Lambda's log-level filtering gives one line of a
// function's output when its log format is JSON: the line's "level" field
// (any case), provided the line is a JSON object that also carries a valid
// RFC 3339 timestamp ("timestamp", or "time" as Go's log/slog names it).
// Anything else, a text line or a JSON one with a missing or unknown level
// or no valid timestamp, counts as INFO (Lambda developer guide,
// "Log-level filtering").
func LineLevel(line []byte) string {
	var fields struct {
		Level     *string `json:"level"`
		Timestamp *string `json:"timestamp"`
		Time      *string `json:"time"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &fields) != nil || fields.Level == nil || levelRank(*fields.Level) < 0 {
		return "INFO"
	}
	if !validTimestamp(fields.Timestamp) && !validTimestamp(fields.Time) {
		return "INFO"
	}
	return strings.ToUpper(strings.TrimSpace(*fields.Level))
}

func validTimestamp(s *string) bool {
	if s == nil {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, *s)
	return err == nil
}

// LogFilter passes on to w the lines of a function's output that Lambda
// would send to CloudWatch Logs with the application log level set to
// level (AWS_LAMBDA_LOG_LEVEL): those whose LineLevel is at least as
// severe. An empty or unknown level filters nothing, as Lambda does not
// filter a function whose log format is text. Close flushes a last line
// that has no newline.
func LogFilter(w io.Writer, level string) io.WriteCloser {
	return &logFilter{w: w, min: levelRank(level)}
}

type logFilter struct {
	mu      sync.Mutex
	w       io.Writer
	min     int
	partial []byte
}

func (f *logFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.partial[:i+1]
		if err := f.pass(line); err != nil {
			return len(p), err
		}
		f.partial = f.partial[i+1:]
	}
}

func (f *logFilter) pass(line []byte) error {
	if f.min >= 0 && levelRank(LineLevel(line)) < f.min {
		return nil
	}
	_, err := f.w.Write(line)
	return err
}

func (f *logFilter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.partial) == 0 {
		return nil
	}
	err := f.pass(f.partial)
	f.partial = nil
	return err
}
