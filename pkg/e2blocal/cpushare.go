//go:build linux

package e2blocal

import (
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// shareKey names the CPU share a sandbox draws on: its tenant's principal
// (the metadata sessionbox puts on every sandbox it creates),
// or "" for a sandbox that names none (an E2B SDK's), which then has a
// share of its own.
func shareKey(md map[string]string) string {
	p := md[session.MetaPrincipal]
	if p == "" {
		return ""
	}
	return md[session.MetaTenant] + "\x00" + p
}

// rebalance splits one share of CPU among the live sandboxes of key: each
// gets DefaultCPUWeight/n, so n busy sandboxes of one principal together
// weigh what one sandbox of another principal weighs, and under contention
// they get about as much CPU. Weights rather than a group per principal:
// warm sandboxes' trees start in their own groups before anyone owns them,
// and a group cannot move to another parent (nor, on v2, take its memory
// charges along when its tasks move). An idle sandbox of the principal
// still counts in n, so its busy siblings get less than the share while
// it idles. Applied outside rt.mu: a write may race another rebalance of
// the same key, and the later one's count wins, as both read it under mu.
func (rt *Runtime) rebalance(key string) {
	if key == "" {
		return
	}
	rt.mu.Lock()
	var groups []jail.Cgroup
	for _, s := range rt.sandboxes {
		if s.cg != nil && s.share == key {
			groups = append(groups, s.cg)
		}
	}
	rt.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	weight := max(1, jail.DefaultCPUWeight/len(groups))
	for _, g := range groups {
		if err := g.SetCPUWeight(weight); err != nil {
			// A hierarchy without the cpu controller: nothing to weigh.
			rt.log.Debug("e2blocal: set CPU weight", "error", err)
		}
	}
}
