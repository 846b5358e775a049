//go:build linux

// Package agentinit is the entry of a sandbox's init process: the runtime
// (package e2blocal) starts bwrap with an agent executable as the tree's
// init, and that executable's main calls RunIfRequested. It is either the
// runtime's own binary re-executed (e2blocal.RunAgentIfRequested) or the
// dedicated cmd/sessionbox-agent, which imports this package alone so that
// each sandbox starts a small binary rather than all of sessionbox.
//
// The same executable is /opt/e2b/sbin/sudo inside sandboxes that have
// root: started under that name it runs the sudo client (package sudo).
package agentinit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/sudo"
)

// The runtime's side of the hand-off.
const (
	// InsidePath is where the agent executable is bound in every sandbox.
	InsidePath = "/opt/e2b/agent"
	// EnvVar, set to "1", marks the process bwrap starts as the agent.
	EnvVar = "E2BLOCAL_AGENT_INIT"

	// Inherited descriptors of the agent (exec.Cmd.ExtraFiles order).
	ConfigFD = 3 // the runtime's configuration (agent.NewConfigReader)
	ReadyFD  = 4 // one byte written once the agent serves
	ListenFD = 5 // the unix socket the agent serves on
)

// isSudo: inside a sandbox with root, /opt/e2b/sbin/sudo links to the agent.
func isSudo() bool {
	if filepath.Base(os.Args[0]) != "sudo" {
		return false
	}
	exe, err := os.Executable()
	return err == nil && exe == InsidePath
}

// RunIfRequested runs the in-sandbox agent (or sudo) and exits when this
// process was started as one; otherwise it returns at once.
func RunIfRequested() {
	if isSudo() {
		os.Exit(sudo.Main(os.Args[1:]))
	}
	if os.Getenv(EnvVar) != "1" {
		return
	}
	// Sandboxed processes inherit the agent's environment; the marker must
	// not make them agents too.
	_ = os.Unsetenv(EnvVar)
	if err := runAgent(); err != nil {
		fmt.Fprintf(os.Stderr, "e2blocal agent: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runAgent() error {
	cfgFile := os.NewFile(ConfigFD, "agent-config")
	ready := os.NewFile(ReadyFD, "agent-ready")
	if cfgFile == nil || ready == nil {
		return fmt.Errorf("agent descriptors %d/%d missing", ConfigFD, ReadyFD)
	}
	// Sandboxed code runs as the agent's uid; a non-dumpable agent cannot be
	// ptraced by it, nor its /proc/<pid>/fd opened (its listening socket,
	// its connections). Commands it starts are dumpable again after execve.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make agent non-dumpable: %w", err)
	}
	// Nothing but the three descriptors from the runtime may reach the
	// commands the agent starts.
	if err := unix.CloseRange(ListenFD+1, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark descriptors close-on-exec: %w", err)
	}
	// Normally done while the tree waits in the warm pool; in parallel
	// with the config hand-off, and always before anything is served.
	reserved := make(chan struct{})
	go func() {
		agent.ReserveThreads(agent.ReservedThreads)
		close(reserved)
	}()
	// The runtime's part arrives at spawn: a standby kernel can start
	// while the tree waits in the warm pool for its sandbox's part.
	cr := agent.NewConfigReader(cfgFile)
	base, err := cr.Base()
	if err != nil {
		return err
	}
	standby, err := agent.Standby(base)
	if err != nil {
		return err
	}
	a, err := cr.Assignment()
	cfgFile.Close()
	<-reserved
	if err != nil {
		if standby != nil {
			standby.Discard()
		}
		return err
	}
	cfg := base.Assign(a)
	lnFile := os.NewFile(ListenFD, "agent-socket")
	if lnFile == nil {
		return fmt.Errorf("agent descriptor %d missing", ListenFD)
	}
	ln, err := net.FileListener(lnFile)
	lnFile.Close()
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return agent.Run(ctx, cfg, standby, ln, func() error {
		_, err := ready.Write([]byte{1})
		return errors.Join(err, ready.Close())
	})
}
