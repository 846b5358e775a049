package session

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestCreateLongerThanTheLease starts a session whose sandbox takes longer
// to create than the start lease while a second call waits for it: the
// lease is renewed while the create runs, so the waiting call does not take
// the start over (a second sandbox, and with workspaces a second restore),
// and both calls run in the one sandbox. In a bubble, with the Manager on
// the bubble's clock, the create's second outlasts the lease every time.
func TestCreateLongerThanTheLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{LeaseDuration: 300 * time.Millisecond})
		r.m.clock = SystemClock{} // the bubble's time, which the renewals' ticker runs on too
		r.sbx.delay = time.Second
		ctx := t.Context()
		first := make(chan error, 1)
		go func() {
			_, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print first"}, nil)
			first <- err
		}()
		// The first call is inside Create, past the lease it took.
		time.Sleep(500 * time.Millisecond)
		res, err := r.m.Execute(ctx, testKey, ExecRequest{Code: "print second"}, nil)
		if err != nil || res.Stdout != "second\n" || res.Restarted {
			t.Fatalf("second call: %+v %v", res, err)
		}
		if err := <-first; err != nil {
			t.Fatalf("first call: %v", err)
		}
		if n, live := r.sbx.count("Create"), r.sbx.live(); n != 1 || len(live) != 1 {
			t.Fatalf("creates = %d, live %v; want one sandbox (the waiting call took the start over)", n, live)
		}
		if s := r.store.session(testKey); s.State != StateRunning || s.LeaseOwner != "" {
			t.Fatalf("session after both calls: %+v", s)
		}
	})
}
