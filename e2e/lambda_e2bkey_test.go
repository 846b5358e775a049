package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testclock"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv"
	"github.com/sessionbox/sessionbox/pkg/lambdaenv/sessionenv"
)

// TestE2BKeyShapeCheckedAtInit: a secret still holding the stack's random
// placeholder, or anything not shaped like an E2B key, fails init with an
// error naming the secret.
func TestE2BKeyShapeCheckedAtInit(t *testing.T) {
	s := newLambdaStack(t)
	for _, v := range []string{"Xk3#placeholder-from-the-stack", "e2b_NOTHEX", "sbx_0123456789abcdef"} {
		s.secrets.Set(secretARN, v)
		_, err := sessionenv.Init(context.Background(), lambdaenv.Start, lambdaenv.WithLogOutput(&syncBuffer{}))
		if err == nil || !strings.Contains(err.Error(), secretARN) || !strings.Contains(err.Error(), "e2b_") ||
			strings.Contains(err.Error(), v) {
			t.Fatalf("secret %q: init error %v, want one naming the secret and the shape, not the value", v, err)
		}
	}
}

// TestE2BKeyRotationReachesWarmFunctions: functions built while the secret
// held a key E2B no longer accepts (the runtime answers 401) re-read the
// secret on a refusal and carry on with the rotated key; while the secret
// holds no better key it is re-read at most once per back-off.
func TestE2BKeyRotationReachesWarmFunctions(t *testing.T) {
	s := newLambdaStack(t)
	const oldKey = "e2b_00000000000000000000000000000000"
	s.secrets.Set(secretARN, oldKey)
	clock := testclock.New(time.Now())
	start, logs := s.env(lambdaenv.Start, lambdaenv.WithClock(clock))
	envs := map[string]*sessionenv.Env{"start": start}
	reads := s.secrets.Count()
	refused := func(t *testing.T) {
		t.Helper()
		if a := invokeAPI(t, envs, "start/start-code-interpreter.json", nil); a.status < 500 {
			t.Fatalf("start with a refused key: %d %s", a.status, a.body)
		}
	}

	// Revoked and not yet replaced: refused, the secret read once.
	for range 3 {
		refused(t)
	}
	if n := s.secrets.Count() - reads; n != 1 {
		t.Fatalf("the secret was read %d times after three refusals, want 1 (then back off)", n)
	}
	if !strings.Contains(logs.String(), "E2B refused the API key") || strings.Contains(logs.String(), oldKey) {
		t.Fatalf("logs:\n%s", logs)
	}

	// Rotated: within the back-off the warm function still uses the old
	// key; after it, the next refusal reads the new one and the call goes
	// through.
	s.secrets.Set(secretARN, e2bKey)
	refused(t)
	clock.Advance(31 * time.Second)
	invokeAPI(t, envs, "start/start-code-interpreter.json", nil).ok(t, http.StatusOK)
	if n := s.secrets.Count() - reads; n != 2 {
		t.Fatalf("the secret was read %d times, want 2", n)
	}
}
