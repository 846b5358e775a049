package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// A background command's output is kept in the sandbox, not in envd: E2B's
// envd keeps nothing for a late Connect, and a Connect cancelled mid-read
// drops what was in flight. The command runs under a small bash wrapper
// that appends its stdout and stderr to files in a private directory of
// its own and records its exit code at the end; a read takes what lies
// past a cursor kept in the same directory and moves the cursor only once
// the bytes are in hand. It uses nothing but envd's process API, so it
// works the same on E2B's cloud and on the local runtime.

// commandsDir holds one directory per background command, named by tag.
const commandsDir = session.CommandOutputDir

// commandMarker separates the wrapper from the caller's command line in
// the wrapper's script, which the wrapper reads back from
// BASH_EXECUTION_STRING: the command line is never quoted or rewritten.
const commandMarker = "\n#sessionbox-command\n"

// wrapperScript runs the command line after the marker in a subshell (so
// its exit or exec ends the subshell, not the wrapper) with its output
// appended to the files; it is in the wrapper's process group, so a kill
// of the group ends both.
const wrapperScript = `d=%s
c=${BASH_EXECUTION_STRING#*$'\n'#sessionbox-command$'\n'}
( eval "$c" ) >>"$d/stdout" 2>>"$d/stderr" </dev/null
echo $? >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"
exit` + commandMarker

// setupScript makes the command's directory before the command starts,
// as the command's user: a read right after the start finds it.
const setupScript = `mkdir -m 1777 ` + commandsDir + ` 2>/dev/null
mkdir -m 700 "$1" && : >"$1/stdout" && : >"$1/stderr"`

// readScript waits up to $2 ms for the command's end (or for $4 new bytes
// on a stream), then prints a header line "ok <cursor out> <cursor err>
// <size out> <size err> [exit code]" and up to $3 bytes of each stream
// past the cursor, stdout on stdout and stderr on stderr (the script's own
// errors go nowhere: its stderr is the command's). The exit code is -1
// when the wrapper died without recording one (killed); a dead wrapper
// not yet reaped by envd (a zombie) counts as dead.
const readScript = `exec 3>&2 2>/dev/null
d=$1 w=$2 max=$3 early=$4
[ -d "$d" ] || { echo missing; exit 0; }
read -r co ce <"$d/cursor" || { co=0; ce=0; }
alive() {
  local st
  read -r st <"/proc/$(cat "$d/pid")/stat" || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
state() {
  x=
  if [ -e "$d/exit" ]; then x=$(cat "$d/exit")
  elif [ -s "$d/pid" ] && ! alive; then
    if [ -e "$d/exit" ]; then x=$(cat "$d/exit"); else x=-1; fi
  fi
}
size() { stat -c %s "$d/$1"; }
end=$(( $(date +%s%3N) + w ))
while state; [ -z "$x" ] && [ "$(date +%s%3N)" -lt "$end" ]; do
  so=$(size stdout) se=$(size stderr)
  if [ $((so - co)) -ge "$early" ] || [ $((se - ce)) -ge "$early" ]; then break; fi
  sleep 0.05
done
so=$(size stdout) se=$(size stderr)
no=$((so - co)); [ "$no" -gt "$max" ] && no=$max
ne=$((se - ce)); [ "$ne" -gt "$max" ] && ne=$max
echo "ok $co $ce $so $se $x"
tail -c +$((co + 1)) "$d/stdout" | head -c "$no"
tail -c +$((ce + 1)) "$d/stderr" | head -c "$ne" >&3`

// pidScript records the wrapper's pid, as envd reported it: written by
// the wrapper itself it would be missing when a kill came first.
const pidScript = `echo "$2" >"$1/pid.tmp" && mv -f "$1/pid.tmp" "$1/pid"`

// commitScript moves the cursor, atomically.
const commitScript = `printf '%s %s\n' "$2" "$3" >"$1/cursor.tmp" && mv -f "$1/cursor.tmp" "$1/cursor"`

// tagRE is what a tag may hold: it names a directory.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// helperTimeout bounds one of the read's own commands beyond its wait.
const helperTimeout = 30 * time.Second

func commandDir(tag string) string { return commandsDir + "/" + tag }

// wrapCommand is the script StartShell runs for cmd.
func wrapCommand(tag, cmd string) string {
	return fmt.Sprintf(wrapperScript, commandDir(tag)) + cmd
}

// unwrapCommand returns the caller's command line of a wrapper's script.
func unwrapCommand(script string) string {
	if _, cmd, ok := strings.Cut(script, commandMarker); ok && strings.HasPrefix(script, "d="+commandsDir+"/") {
		return cmd
	}
	return script
}

// helper runs one of the read's scripts as root (the command's directory
// is private to its user) without the login files.
func helper(ctx context.Context, sb *e2b.Sandbox, script string, maxOut int, args ...string) (*e2b.CommandResult, error) {
	argv := append([]string{"/bin/bash", "-c", script, "sessionbox"}, args...)
	res, err := sb.Commands().Exec(ctx, argv, e2b.CommandOptions{User: "root", MaxOutputBytes: maxOut})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// setupCommand makes the directory of the command tagged tag.
func setupCommand(ctx context.Context, sb *e2b.Sandbox, c session.ShellCommand) error {
	if !tagRE.MatchString(c.Tag) {
		return &session.Error{Kind: session.ErrInvalid, Detail: fmt.Sprintf("command tag %q is not a plain name", c.Tag)}
	}
	argv := []string{"/bin/bash", "-c", setupScript, "sessionbox", commandDir(c.Tag)}
	hctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	if _, err := sb.Commands().Exec(hctx, argv, e2b.CommandOptions{User: c.User}); err != nil {
		var exit *e2b.CommandExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("make the output directory of command %s: %w", c.Tag, err)
		}
		return domainError("make the output directory of command "+c.Tag, err)
	}
	return nil
}

// recordPID writes the pid of the command tagged tag beside its output.
func recordPID(ctx context.Context, sb *e2b.Sandbox, tag string, pid uint32) error {
	hctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	if _, err := helper(hctx, sb, pidScript, 0, commandDir(tag), strconv.FormatUint(uint64(pid), 10)); err != nil {
		return domainError("record the pid of command "+tag, err)
	}
	return nil
}

// ReadShell returns what the command tagged tag printed past its read
// cursor, and moves the cursor past it.
func (a *E2B) ReadShell(ctx context.Context, id, tag string, r session.ShellReadRequest) (session.ShellRead, error) {
	if !tagRE.MatchString(tag) {
		return session.ShellRead{}, &session.Error{Kind: session.ErrNotFound, Detail: fmt.Sprintf("read command %s: no such command", tag)}
	}
	sb, err := a.handle(ctx, id)
	if err != nil {
		return session.ShellRead{}, err
	}
	dir := commandDir(tag)
	early := r.MaxBytes
	if r.UntilOutput {
		early = 1
	}
	hctx, cancel := context.WithTimeout(ctx, r.Wait+helperTimeout)
	defer cancel()
	res, err := helper(hctx, sb, readScript, r.MaxBytes+256, dir, strconv.FormatInt(r.Wait.Milliseconds(), 10),
		strconv.Itoa(r.MaxBytes), strconv.Itoa(max(early, 1)))
	if err != nil {
		return session.ShellRead{}, domainError("read the output of command "+tag, err)
	}
	out, cur, err := parseRead(res, dir)
	if err != nil {
		return session.ShellRead{}, fmt.Errorf("read the output of command %s: %w", tag, err)
	}
	if out.Stdout == "" && out.Stderr == "" {
		return out, nil
	}
	// The bytes are in hand: the cursor moves even if the caller has just
	// given up, or they would be read again after being delivered.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), helperTimeout)
	defer ccancel()
	next := cursor{out: cur.out + int64(len(out.Stdout)), err: cur.err + int64(len(out.Stderr))}
	if _, err := helper(cctx, sb, commitScript, 0, dir, strconv.FormatInt(next.out, 10), strconv.FormatInt(next.err, 10)); err != nil {
		return session.ShellRead{}, domainError("move the read cursor of command "+tag, err)
	}
	return out, nil
}

type cursor struct{ out, err int64 }

// parseRead reads readScript's answer.
func parseRead(res *e2b.CommandResult, dir string) (session.ShellRead, cursor, error) {
	head, body, _ := strings.Cut(res.Stdout, "\n")
	f := strings.Fields(head)
	if len(f) == 1 && f[0] == "missing" {
		return session.ShellRead{}, cursor{}, &session.Error{Kind: session.ErrNotFound, Detail: "no such command"}
	}
	if len(f) < 5 || len(f) > 6 || f[0] != "ok" {
		return session.ShellRead{}, cursor{}, fmt.Errorf("unexpected answer %q (stderr %q)", truncate(head), truncate(res.Stderr))
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return session.ShellRead{}, cursor{}, fmt.Errorf("unexpected answer %q", truncate(head))
		}
		n[i] = v
	}
	out := session.ShellRead{Running: len(f) == 5, Dir: dir, StdoutBytes: n[2], StderrBytes: n[3]}
	if !out.Running {
		code, err := strconv.Atoi(f[5])
		if err != nil {
			return session.ShellRead{}, cursor{}, fmt.Errorf("unexpected exit code %q", f[5])
		}
		out.ExitCode = code
	}
	cur := cursor{out: n[0], err: n[1]}
	out.Stdout = wholeRunes(body, cur.out+int64(len(body)) < n[2] || out.Running)
	out.Stderr = wholeRunes(res.Stderr, cur.err+int64(len(res.Stderr)) < n[3] || out.Running)
	out.More = cur.out+int64(len(out.Stdout)) < n[2] || cur.err+int64(len(out.Stderr)) < n[3]
	return out, cur, nil
}

// wholeRunes drops a UTF-8 sequence cut at the end of s when more may
// follow, so the next read starts with the rest of it.
func wholeRunes(s string, more bool) string {
	if !more {
		return s
	}
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
