// Package storetest is the contract every session.Store must meet, as one
// test suite: run it against each implementation (and each backend of one)
// so they cannot drift apart. pkg/store runs it on two DynamoDB emulators;
// pkg/session runs it on the in-memory store its Manager tests use, so no
// Manager test passes on behaviour a real store does not have.
package storetest

import (
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// Env is one fresh, empty store under test.
type Env struct {
	Store session.Store
	// Fail, when not nil, makes the backend answer every call as a failing
	// or overloaded service does (on) or heals it (off).
	Fail func(on bool)
}

// Factory makes a fresh Env whose store reads time from clock.
type Factory func(t *testing.T, clock session.Clock) Env

// epoch is the suite's starting time: fixed, so failures reproduce.
var epoch = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Run runs the whole contract against stores made by newEnv.
func Run(t *testing.T, newEnv Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Env, *testclock.Clock)
	}{
		{"SessionLifecycle", testSessionLifecycle},
		{"SessionRoundTrip", testSessionRoundTrip},
		{"KeysDoNotCollide", testKeysDoNotCollide},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"ConcurrentCreates", testConcurrentCreates},
		{"Expired", testExpired},
		{"ExpiryAgreesForReadersAndWriters", testExpiryAgrees},
		{"ListPaging", testListPaging},
		{"ListCursorTampering", testListCursorTampering},
		{"DueSessions", testDueSessions},
		{"DueSessionsLimitAndOrder", testDueLimitAndOrder},
		{"DueSessionsFollowUpdates", testDueFollowUpdates},
		{"Runs", testRuns},
		{"RunTooLarge", testRunTooLarge},
		{"SessionTooLarge", testSessionTooLarge},
		{"APIKeys", testAPIKeys},
		{"Unavailable", testUnavailable},
		{"Slots", testSlots},
		{"SlotsUnderBurst", testSlotsUnderBurst},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := testclock.New(epoch)
			tc.fn(t, newEnv(t, clock), clock)
		})
	}
}
