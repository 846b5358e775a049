package lambdaemu_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/lambdaemu"
)

// TestLineLevel is Lambda's rule for a line's level with the JSON log
// format: the "level" field when valid and the line has a valid timestamp,
// else INFO.
func TestLineLevel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ line, want string }{
		{`{"time":"2026-11-28T03:00:00.123Z","level":"WARN","msg":"x"}`, "WARN"},
		{`{"timestamp":"2026-11-28T03:00:00Z","level":"debug","msg":"x"}`, "DEBUG"},
		{`{"timestamp":"2026-11-28T03:00:00Z","level":"FATAL","_aws":{}}`, "FATAL"},
		{`{"_aws":{"Timestamp":1},"Killed":1}`, "INFO"},                 // no level: an EMF line as it was
		{`{"level":"ERROR","msg":"x"}`, "INFO"},                         // no timestamp
		{`{"timestamp":"yesterday","level":"ERROR"}`, "INFO"},           // invalid timestamp
		{`{"timestamp":"2026-11-28T03:00:00Z","level":"LOUD"}`, "INFO"}, // unknown level
		{`{"timestamp":"2026-11-28T03:00:00Z","level":3}`, "INFO"},      // not a string
		{`plain text from a library`, "INFO"},
	} {
		if got := lambdaemu.LineLevel([]byte(c.line)); got != c.want {
			t.Errorf("LineLevel(%s) = %s, want %s", c.line, got, c.want)
		}
	}
}

// TestLogFilter drops what Lambda would not send to CloudWatch Logs at the
// level, line by line across writes.
func TestLogFilter(t *testing.T) {
	t.Parallel()
	const (
		info  = `{"time":"2026-11-28T03:00:00Z","level":"INFO","msg":"i"}` + "\n"
		warn  = `{"time":"2026-11-28T03:00:00Z","level":"WARN","msg":"w"}` + "\n"
		fatal = `{"timestamp":"2026-11-28T03:00:00Z","level":"FATAL","msg":"f"}`
		text  = "text\n"
	)
	for _, c := range []struct{ level, want string }{
		{"", info + warn + text + fatal},
		{"DEBUG", info + warn + text + fatal},
		{"info", info + warn + text + fatal},
		{"WARN", warn + fatal},
		{"FATAL", fatal},
	} {
		var out bytes.Buffer
		f := lambdaemu.LogFilter(&out, c.level)
		all := info + warn + text + fatal
		// Split mid-line: the filter decides on whole lines.
		for _, part := range []string{all[:10], all[10:70], all[70:]} {
			if _, err := io.WriteString(f, part); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want {
			t.Errorf("level %q passed\n%s\nwant\n%s", c.level, out.String(), c.want)
		}
	}
}
