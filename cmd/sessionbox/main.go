// Command sessionbox is the one binary of sessionbox: the whole API served
// locally (serve), the local E2B-compatible runtime (runtime), API key
// administration (keys) and a small client for the API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(cmds)
		return 2
	}
	for _, c := range cmds {
		if c.name == args[0] {
			err := c.run(ctx, args[1:])
			if errors.Is(err, flag.ErrHelp) {
				// The flag set printed the usage asked for.
				return 0
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "sessionbox %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "sessionbox: unknown command %q\n\n", args[0])
	usage(cmds)
	return 2
}

func usage(cmds []command) {
	fmt.Fprintln(os.Stderr, "usage: sessionbox <command> [flags]")
	fmt.Fprintln(os.Stderr, "\ncommands:")
	for _, c := range cmds {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
}
