package sandboxes

import (
	"errors"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestParseRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		stdout, stderr string
		want           session.ShellRead
		wantCur        cursor
		wantErr        error
	}{
		{name: "running", stdout: "ok 3 0 10 2 \nabcdefg", stderr: "e\n",
			want:    session.ShellRead{Stdout: "abcdefg", Stderr: "e\n", Running: true, Dir: "/d", StdoutBytes: 10, StderrBytes: 2},
			wantCur: cursor{out: 3}},
		{name: "ended", stdout: "ok 0 0 2 0 3\nx\n",
			want: session.ShellRead{Stdout: "x\n", ExitCode: 3, Dir: "/d", StdoutBytes: 2}},
		{name: "killed, more waiting", stdout: "ok 0 0 9 0 -1\nabc",
			want: session.ShellRead{Stdout: "abc", ExitCode: -1, More: true, Dir: "/d", StdoutBytes: 9}},
		// "é" is two bytes: a read cut after the first leaves it whole
		// for the next.
		{name: "cut rune", stdout: "ok 0 0 5 0 \nab\xc3", want: session.ShellRead{Stdout: "ab", Running: true, More: true, Dir: "/d", StdoutBytes: 5}},
		{name: "missing", stdout: "missing\n", wantErr: session.ErrNotFound},
		{name: "garbage", stdout: "bash: oops\n", wantErr: errors.New("unexpected")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, cur, err := parseRead(&e2b.CommandResult{Stdout: tc.stdout, Stderr: tc.stderr}, "/d")
			switch {
			case tc.wantErr == session.ErrNotFound:
				if !errors.Is(err, session.ErrNotFound) {
					t.Fatalf("err %v, want not found", err)
				}
			case tc.wantErr != nil:
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
			case err != nil || got != tc.want || cur != tc.wantCur:
				t.Fatalf("got %+v %+v %v, want %+v %+v", got, cur, err, tc.want, tc.wantCur)
			}
		})
	}
}

func TestWrapCommand(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"echo hi", "a )\n#sessionbox-command\nb", "cat <<'EOF'\nx\nEOF\n"} {
		script := wrapCommand("cmd-1", cmd)
		if got := unwrapCommand(script); got != cmd {
			t.Errorf("unwrap(wrap(%q)) = %q", cmd, got)
		}
	}
	if got := unwrapCommand("python3 -m http.server"); got != "python3 -m http.server" {
		t.Errorf("a plain command unwrapped to %q", got)
	}
}
