// Package testclock is the settable clock tests put where production code
// takes a clock (session.Clock, store.WithClock, the API key cache), so
// expiry, deadlines and caches are tested by moving time, not waiting for
// it. It is test support: no product code imports it.
package testclock

import (
	"sync"
	"time"
)

// Clock shows a time that moves only when told to. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock showing t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
