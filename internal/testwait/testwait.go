// Package testwait waits in tests for a condition rather than for a fixed
// time: a fixed sleep is too short on a loaded machine and too long on an
// idle one, and says nothing when it fails. It is test support: no product
// code imports it.
package testwait

import (
	"testing"
	"time"
)

// First and longest pause between two checks: short at first, so a
// condition that holds soon is seen soon, longer later, so a slow one does
// not spin.
const (
	firstPause = 5 * time.Millisecond
	maxPause   = 200 * time.Millisecond
)

// Until checks cond until it returns nil, and fails the test with cond's
// last error when timeout passes first or the test's context ends. cond
// runs on the test's goroutine and may call t.Fatal for errors that no
// waiting can mend.
func Until(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(t, timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// Poll is Until that returns the failure instead of failing the test: nil
// once cond holds, else an error wrapping cond's last one.
func Poll(t testing.TB, timeout time.Duration, cond func() error) error {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return &TimeoutError{After: timeout, Last: err}
		}
		timer := time.NewTimer(min(pause, time.Until(deadline)+time.Millisecond))
		select {
		case <-t.Context().Done():
			timer.Stop()
			return &TimeoutError{After: timeout, Last: err}
		case <-timer.C:
		}
		pause = min(2*pause, maxPause)
	}
}

// TimeoutError is a condition that did not hold in time.
type TimeoutError struct {
	After time.Duration
	Last  error // why the condition did not hold at the last check
}

func (e *TimeoutError) Error() string {
	return "not so after " + e.After.String() + ": " + e.Last.Error()
}

func (e *TimeoutError) Unwrap() error { return e.Last }
