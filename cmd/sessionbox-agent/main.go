//go:build linux

// Command sessionbox-agent is the init of every local sandbox (and its
// sudo) when the runtime is given it (`sessionbox serve|runtime --agent`,
// e2blocal.Config.Agent), instead of re-executing all of sessionbox: it
// links only the agent, so each sandbox starts and holds a small binary.
// Started any other way it prints its usage and exits 2.
package main

import (
	"fmt"
	"os"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agentinit"
)

func main() {
	agentinit.RunIfRequested()
	fmt.Fprintln(os.Stderr, "usage: sessionbox-agent is started by the sessionbox runtime as a sandbox's init (sessionbox serve|runtime --agent PATH); it takes no arguments")
	os.Exit(2)
}
