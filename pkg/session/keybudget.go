package session

import (
	"context"
	"fmt"
	"time"
)

// The provider's concurrency cap (E2B: 20 running sandboxes on the Base
// plan, 100 and up on Pro) is per API key, and one key may serve several
// tenants and deployments, in other accounts and regions. No table of ours
// sees them all; the provider does, so the budget is counted there: before
// a create, the key's running sandboxes are listed (E2B's list, one page
// per 100 sandboxes, well within its management API's rate) and a start
// that would pass MaxSandboxesPerKey is refused with a 429 naming the
// shared budget. A count can be overtaken by a concurrent create elsewhere;
// E2B's own 429 then refuses it, which the client retries for a while.
// A shared counter would need a store every deployment reaches, and would
// drift from the provider whenever a sandbox ended on its own.

// createOnKey creates a sandbox within the key's budget.
func (m *Manager) createOnKey(ctx context.Context, spec SandboxSpec) (SandboxInfo, error) {
	if m.cfg.MaxSandboxesPerKey > 0 {
		all, err := m.sandboxes.List(ctx, nil)
		if err != nil {
			return SandboxInfo{}, fmt.Errorf("count the key's sandboxes: %w", err)
		}
		running := 0
		for _, sb := range all {
			if sb.State == StateRunning {
				running++
			}
		}
		if running >= m.cfg.MaxSandboxesPerKey {
			return SandboxInfo{}, &Error{Kind: ErrLimit, RetryAfter: 30 * time.Second, Detail: fmt.Sprintf(
				"the sandbox provider's key has %d running sandboxes, its budget is %d, shared by every tenant and deployment on it: "+
					"stop a session or wait for idle ones to be reaped", running, m.cfg.MaxSandboxesPerKey)}
		}
	}
	return m.sandboxes.Create(ctx, spec)
}
