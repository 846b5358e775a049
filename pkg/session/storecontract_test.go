package session_test

import (
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
	"github.com/sessionbox/sessionbox/pkg/store/storetest"
)

// TestFakeStoreContract holds the Manager tests' in-memory store to the
// contract the DynamoDB store meets, so a Manager test cannot pass on
// behaviour no real store has.
func TestFakeStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, clock session.Clock) storetest.Env {
		st := session.NewFakeStore(clock)
		return storetest.Env{Store: st, Fail: st.SetFailing}
	})
}
