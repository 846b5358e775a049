//go:build linux

package e2blocal

import (
	"errors"
	"sync/atomic"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agentinit"
)

// agentHookCalled records that this process called RunAgentIfRequested.
// It is process-wide by nature: the hook is about what this binary does
// when the runtime re-executes it.
var agentHookCalled atomic.Bool

// errNoAgentHook is why a runtime that uses its own binary as the agent
// (no Config.Agent) refuses to start in a process whose main never called
// the hook: every sandbox would start this binary as its agent, which would
// run main instead, and each create would time out.
var errNoAgentHook = errors.New("e2blocal: RunAgentIfRequested was not called in main (or TestMain); the runtime re-executes this binary as each sandbox's agent unless Config.Agent names a dedicated one")

// RunAgentIfRequested runs the in-sandbox agent and exits when this process
// was started by the runtime as a sandbox's init; otherwise it returns at
// once. Call it first thing in main() and in TestMain of packages that start
// a runtime without Config.Agent, because such a runtime re-executes its own
// binary as the agent.
func RunAgentIfRequested() {
	agentHookCalled.Store(true)
	agentinit.RunIfRequested()
}
