package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
)

// Inherited descriptors of the agent (exec.Cmd.ExtraFiles order).
const (
	agentConfigFD = 3
	agentReadyFD  = 4
)

// RunAgentIfRequested runs the in-sandbox agent and exits when this process
// was started by the runtime as a sandbox's init; otherwise it returns at
// once. Call it first thing in main() and in TestMain of packages that start
// a runtime, because the runtime re-executes its own binary as the agent.
func RunAgentIfRequested() {
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
	// While the tree waits in the warm pool: off the create path.
	agent.ReserveThreads(agent.ReservedThreads)
	cfg, err := agent.ReadConfig(cfgFile)
	cfgFile.Close()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return agent.Run(ctx, cfg, func() error {
		_, err := ready.Write([]byte{1})
		return errors.Join(err, ready.Close())
	})
}
