package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// holdLease keeps our lease on *s (starting or stopping) from running out
// while long work runs under it, a workspace's restore or checkpoint taking
// longer than LeaseDuration: every third of it the lease is extended by a
// conditional write, which updates *s. The work gets a context cancelled
// when the lease is lost to another caller; release stops the renewals and
// says whether the lease was lost. *s must not be touched until release
// returns; the work reads a copy.
func (m *Manager) holdLease(ctx context.Context, s *Session) (work context.Context, release func() error) {
	work, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var lost error
	wg.Go(func() {
		t := time.NewTicker(max(m.cfg.LeaseDuration/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-work.Done():
				return
			case <-t.C:
			}
			next := *s
			next.LeaseUntil = m.clock.Now().Add(m.cfg.LeaseDuration)
			setDue(&next)
			err := m.store.UpdateSession(context.WithoutCancel(ctx), &next)
			if errors.Is(err, ErrConflict) {
				lost = fmt.Errorf("session %q: the lease was taken over during a long operation: %w", s.SessionID, errRetry)
				cancel(lost)
				return
			}
			if err != nil {
				m.log.WarnContext(ctx, "extend lease", "session", s.SessionID, "err", err)
				continue
			}
			*s = next
		}
	})
	return work, func() error {
		close(done)
		wg.Wait()
		cancel(nil)
		return lost
	}
}
