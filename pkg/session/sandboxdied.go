package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// diedUnder reports whether a call's failure to reach its sandbox (the
// connection broke off: unavailable) was the sandbox dying during the call:
// its agent killed by the out-of-memory killer or by code in the sandbox
// (sudo kill). That is the sandbox's own doing, so it is answered as such
// (sandboxDied), not as the provider failing. The provider notices the death
// a moment after the connection breaks, hence the short wait.
func (m *Manager) diedUnder(ctx context.Context, id string, err error) bool {
	if ctx.Err() != nil || !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrSandboxGone) {
		return false
	}
	dctx, cancel := detach(ctx)
	defer cancel()
	for range 10 {
		_, gerr := m.sandboxes.Get(dctx, id)
		switch {
		case errors.Is(gerr, ErrSandboxGone), errors.Is(gerr, ErrNotFound):
			return true
		case gerr != nil:
			return false
		}
		select {
		case <-dctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// sandboxDied is the answer to a call during which the sandbox died.
func sandboxDied(key Key, doing string, err error) error {
	return &Error{Kind: ErrGone, Err: err, Detail: fmt.Sprintf(
		"session %q's sandbox died during this %s: its processes were killed (out of memory, or by a process in the sandbox, e.g. kill with sudo); its kernel state is gone, and the next call starts a fresh sandbox", key.SessionID, doing)}
}
