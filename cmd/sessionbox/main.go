// Command sessionbox is the one binary of sessionbox: the whole API served
// locally (serve), the local E2B-compatible runtime (runtime), API key
// administration (keys) and a small client for the API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/sessionbox/sessionbox/pkg/buildstamp"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
)

// command is one subcommand; run gets the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

func commands() []command {
	cmds := []command{
		// Each subcommand lives in its own file of this package.
		serveCommand(),
		runtimeCommand(),
		keysCommand(),
		mcpCommand(),
		smokeCommand(),
	}
	return append(cmds, clientCommands()...)
}

func main() {
	// The runtime re-executes this binary as each sandbox's agent.
	e2blocal.RunAgentIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	cmds := commands()
	if len(args) == 0 {
		mainUsage(os.Stderr, cmds)
		return 2
	}
	name := args[0]
	switch name {
	case "version", "-version", "--version":
		fmt.Fprintln(os.Stdout, versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			mainUsage(os.Stdout, cmds)
			return 0
		}
		// `help CMD` is `CMD --help`.
		name, args = args[1], []string{args[1], "--help"}
	}
	for _, c := range cmds {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args[1:])
		var misuse *errUsage
		var exit *exitError
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			// ErrHelp: the command printed the help asked for.
			return 0
		case errors.As(err, &misuse):
			fmt.Fprintf(os.Stderr, "sessionbox %s: %v\n", c.name, err)
			return 2
		case errors.As(err, &exit):
			fmt.Fprintf(os.Stderr, "sessionbox %s: %s\n", c.name, describe(err))
			return exit.code
		}
		fmt.Fprintf(os.Stderr, "sessionbox %s: %s\n", c.name, describe(err))
		return 1
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	fmt.Fprintf(os.Stderr, "sessionbox: unknown command %q%s\n\n", name, didYouMean(name, names))
	mainUsage(os.Stderr, cmds)
	return 2
}

// exitError is a failure that sets the process's exit code, e.g. a remote
// command's own, so that scripts can tell one failure from another.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// versionLine names this build: its build stamp (a hash of its sources, set
// by `make bins`), the source revision when the go command recorded one,
// and the toolchain and platform.
func versionLine() string {
	stamp := buildstamp.Stamp
	if stamp == "" {
		stamp = "unstamped"
	}
	line := "sessionbox " + stamp
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				line += " (revision " + s.Value[:12] + ")"
			}
		}
	}
	return line + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func mainUsage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: sessionbox <command> [arguments] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Flags may come before or after arguments. Every client command takes --json
(print the API's JSON answer) and, when it acts on a session, --session ID
(default "default").

environment (client commands):
  SESSIONBOX_URL      the API's base URL (default `+defaultURL+`; --url wins)
  SESSIONBOX_API_KEY  the API key (`+"`sessionbox serve`"+` prints one)

Exit codes: 0 done, 1 failed (the code raised, the API refused, nothing
answered), 2 misused; "cmd run" exits with the remote command's code (124
when it ran past its timeout). "sessionbox --version" prints the build.

Run 'sessionbox help COMMAND' or 'sessionbox COMMAND --help' for a command's
flags and subcommands.
`)
}
