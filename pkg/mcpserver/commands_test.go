package mcpserver

import (
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestCommandResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		res     session.CommandResult
		isError bool
		want    []string
		not     []string
	}{
		{"non-zero exit is a result", session.CommandResult{ExitCode: 2, Stdout: "a\n", Stderr: "b"}, false,
			[]string{"exit code 2", "[stdout]\na\n", "[stderr]\nb"}, []string{"Note:"}},
		{"timeout", session.CommandResult{ExitCode: -1, Stdout: "before\n", TimedOut: true}, true,
			[]string{"did not finish within its time limit", "[stdout]\nbefore"}, []string{"exit code"}},
		{"cut and replaced", session.CommandResult{Truncated: true, Restarted: true}, false,
			[]string{"the sandbox was replaced", "the output was cut", "at most 200 KB", "exit code 0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := commandResult(&tt.res, defaultMaxOutputBytes)
			text := textOf(out)
			if out.IsError != tt.isError {
				t.Errorf("isError %v, want %v", out.IsError, tt.isError)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("text %q has %q", text, n)
				}
			}
			if sc := commandOutput(&tt.res); sc.ExitCode != tt.res.ExitCode || sc.TimedOut != tt.res.TimedOut {
				t.Errorf("structured output %+v", sc)
			}
		})
	}
}
