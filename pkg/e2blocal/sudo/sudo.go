//go:build linux

// Package sudo gives a sandbox's user passwordless sudo, as E2B's templates
// do. Sandboxes run with no_new_privs (their seccomp filter needs it), so a
// setuid program cannot work; instead `sudo` is a client that asks the
// sandbox agent, which runs as root inside the sandbox, to run the command
// as root with the caller's standard descriptors, and exits with its
// status. The agent listens on an abstract unix socket, which only
// processes in the sandbox's own network namespace can reach.
package sudo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// SocketName is the agent's abstract socket ("@" is the leading NUL).
const SocketName = "@e2b-sudo"

// maxRequest bounds one request packet (argv and environment).
const maxRequest = 1 << 20

// request is the client's one packet; its three descriptors (stdin, stdout,
// stderr) ride along as SCM_RIGHTS.
type request struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}

// reply is the server's last packet: the exit status or why nothing ran.
type reply struct {
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"`
}

// control is a signal the client forwards while the command runs.
type control struct {
	Signal int `json:"signal"`
}

// options are the sudo flags the client understands.
type options struct {
	login, shell, keepEnv, noop bool
	user                        string
	argv                        []string
}

func parseArgs(args []string) (options, error) {
	o := options{user: "root"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.argv = args[i+1:]
			return o, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.argv = args[i:]
			return o, nil
		}
		if strings.HasPrefix(a, "--") {
			return o, fmt.Errorf("option %s is not supported in this sandbox", a)
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'i':
				o.login = true
			case 's':
				o.shell = true
			case 'E', 'H', 'n', 'S', 'A', 'P':
				o.keepEnv = o.keepEnv || a[j] == 'E'
			case 'k', 'K', 'v':
				o.noop = true
			case 'u':
				rest := a[j+1:]
				if rest == "" {
					if i+1 >= len(args) {
						return o, errors.New("option requires an argument -- 'u'")
					}
					i++
					rest = args[i]
				}
				o.user = rest
				j = len(a)
			default:
				return o, fmt.Errorf("option -%c is not supported in this sandbox", a[j])
			}
		}
	}
	return o, nil
}

// commandLine turns the options into the argv to run, the environment and
// the working directory, given the caller's.
func (o options) commandLine(env []string, cwd string) (argv, outEnv []string, dir string, err error) {
	home, name := "/root", "root"
	switch o.user {
	case "root", "0", "#0":
	default:
		return nil, nil, "", fmt.Errorf("unknown user %s: this sandbox's sudo runs commands as root", o.user)
	}
	argv = o.argv
	switch {
	case o.login:
		argv = []string{"/bin/bash", "-l"}
		if len(o.argv) > 0 {
			argv = append(argv, "-c", strings.Join(o.argv, " "))
		}
	case o.shell:
		argv = []string{"/bin/bash"}
		if len(o.argv) > 0 {
			argv = append(argv, "-c", strings.Join(o.argv, " "))
		}
	case len(argv) == 0:
		return nil, nil, "", errors.New("usage: sudo [-E] [-i | -s] [-u root] [command [args...]]")
	}
	keep := map[string]bool{"PATH": true, "TERM": true, "LANG": true, "LANGUAGE": true, "TZ": true, "COLORTERM": true}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if o.keepEnv || keep[k] || strings.HasPrefix(k, "LC_") {
			if k != "HOME" && k != "USER" && k != "LOGNAME" && k != "SHELL" && !strings.HasPrefix(k, "SUDO_") {
				outEnv = append(outEnv, kv)
			}
		}
	}
	caller := os.Getenv("USER")
	outEnv = append(outEnv, "HOME="+home, "USER="+name, "LOGNAME="+name, "SHELL=/bin/bash",
		"SUDO_USER="+caller, fmt.Sprintf("SUDO_UID=%d", os.Getuid()), fmt.Sprintf("SUDO_GID=%d", os.Getgid()),
		"SUDO_COMMAND="+strings.Join(o.argv, " "))
	dir = cwd
	if o.login {
		dir = home
	}
	return argv, outEnv, dir, nil
}

// lookPath resolves name against the request's PATH, not the agent's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

func encode(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

var errNoFDs = errors.New("request carries no descriptors")

func parseFDs(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		r, err := syscall.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, r...)
		}
	}
	if len(fds) == 0 {
		return nil, errNoFDs
	}
	return fds, nil
}
