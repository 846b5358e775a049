package session

import (
	"context"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
)

// Exports for the external tests (package session_test), which run the
// Manager on the real store and blob adapters and need the fake provider
// and clock for the parts with no stand-in here.

type FakeSandboxes = fakeSandboxes

func NewFakeSandboxes(c Clock) *FakeSandboxes { return newFakeSandboxes(c) }

func (f *fakeSandboxes) Count(op string) int      { return f.count(op) }
func (f *fakeSandboxes) Vanish(id string)         { f.vanish(id) }
func (f *fakeSandboxes) Live() []string           { return f.live() }
func (f *fakeSandboxes) File(id, p string) []byte { b, _ := f.file(id, p); return b }
func (f *fakeSandboxes) SetDelay(d time.Duration) { f.delay = d }

// NewFakeClock is the internal tests' clock, at their fixed start.
func NewFakeClock() *testclock.Clock { return newFakeClock() }

// SetExecFn replaces the fake provider's interpreter.
func (f *fakeSandboxes) SetExecFn(fn func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error)) {
	f.execFn = fn
}

type FakeStore = fakeStore

// NewFakeStore returns the in-memory store the Manager's tests use, reading
// time from c (which decides what has expired).
func NewFakeStore(c Clock) *FakeStore { return newFakeStore(c) }

// SetFailing makes every store call fail as an overloaded backend does
// (on) or heals it (off).
func (f *fakeStore) SetFailing(on bool) {
	if !on {
		f.fail = nil
		return
	}
	f.fail = func(op string) error { return Errorf(ErrUnavailable, "%s: injected outage", op) }
}
