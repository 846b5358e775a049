//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/sudo"
)

// Inherited descriptors of the agent (exec.Cmd.ExtraFiles order).
const (
	agentConfigFD = 3
	agentReadyFD  = 4
	agentListenFD = 5
)

// agentHookCalled records that this process called RunAgentIfRequested.
// It is process-wide by nature: the hook is about what this binary does
// when the runtime re-executes it.
var agentHookCalled atomic.Bool

// errNoAgentHook is why a runtime refuses to start in a process whose main
// never called the hook: every sandbox would start this binary as its
// agent, which would run main instead, and each create would time out.
var errNoAgentHook = errors.New("e2blocal: RunAgentIfRequested was not called in main (or TestMain); the runtime re-executes this binary as each sandbox's agent")

// RunAgentIfRequested runs the in-sandbox agent and exits when this process
// was started by the runtime as a sandbox's init; otherwise it returns at
// once. Call it first thing in main() and in TestMain of packages that start
// a runtime, because the runtime re-executes its own binary as the agent.
func RunAgentIfRequested() {
	agentHookCalled.Store(true)
	// Inside a sandbox with root, /opt/e2b/sbin/sudo links to the agent.
	if filepath.Base(os.Args[0]) == "sudo" {
		if exe, err := os.Executable(); err == nil && exe == insideAgent {
			os.Exit(sudo.Main(os.Args[1:]))
		}
	}
	if os.Getenv(agentEnvVar) != "1" {
		return
	}
	// Sandboxed processes inherit the agent's environment; the marker must
	// not make them agents too.
	_ = os.Unsetenv(agentEnvVar)
	if err := runAgent(); err != nil {
		fmt.Fprintf(os.Stderr, "e2blocal agent: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runAgent() error {
	cfgFile := os.NewFile(agentConfigFD, "agent-config")
	ready := os.NewFile(agentReadyFD, "agent-ready")
	if cfgFile == nil || ready == nil {
		return fmt.Errorf("agent descriptors %d/%d missing", agentConfigFD, agentReadyFD)
	}
	// Sandboxed code runs as the agent's uid; a non-dumpable agent cannot be
	// ptraced by it, nor its /proc/<pid>/fd opened (its listening socket,
	// its connections). Commands it starts are dumpable again after execve.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make agent non-dumpable: %w", err)
	}
	// Nothing but the three descriptors from the runtime may reach the
	// commands the agent starts.
	if err := unix.CloseRange(agentListenFD+1, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
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
	lnFile := os.NewFile(agentListenFD, "agent-socket")
	if lnFile == nil {
		return fmt.Errorf("agent descriptor %d missing", agentListenFD)
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
