//go:build linux

package e2blocal

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestPlanLimits holds the runtime to E2B's answers for its plan limits:
// a timeout past the maximum lifetime is a 400 with E2B's message on
// create, connect, resume and set-timeout; creates past the rate are 429
// "Rate limit exceeded" with a Retry-After.
func TestPlanLimits(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{MaxLifetime: time.Hour, CreateRate: 0.01})
	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "timeout": 3600})
	const tooLong = "Timeout cannot be greater than 1 hours"
	for _, c := range []struct{ method, path string }{
		{"POST", "/v2/sandboxes"}, {"POST", "/sandboxes"},
		{"POST", "/v2/sandboxes/" + sb.SandboxID + "/connect"}, {"POST", "/sandboxes/" + sb.SandboxID + "/connect"},
		{"POST", "/sandboxes/" + sb.SandboxID + "/timeout"},
	} {
		r := api(t, rt, c.method, c.path, map[string]any{"templateID": "base", "timeout": 3601})
		var body apiError
		r.decode(t, &body)
		if r.status != http.StatusBadRequest || body.Code != http.StatusBadRequest || body.Message != tooLong {
			t.Errorf("%s %s for 3601 s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	// The create above spent the token (one every 100 s, so however slow
	// the host the next create comes before it is back): refused, with the
	// wait. The bucket's refill is TestCreateRateBucket's.
	r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "base"})
	var body apiError
	r.decode(t, &body)
	after, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != http.StatusTooManyRequests || body.Message != "Rate limit exceeded" || after < 1 || after > 100 {
		t.Fatalf("create past the rate: %d %s Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
}

func TestCreateRateBucket(t *testing.T) {
	t.Parallel()
	c := newCreateRate(2)
	now := time.Unix(1000, 0)
	for i := range 2 {
		if ok, _ := c.take(now); !ok {
			t.Fatalf("create %d of the burst refused", i)
		}
	}
	ok, wait := c.take(now)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("third create: ok %v wait %s", ok, wait)
	}
	if ok, _ := c.take(now.Add(500 * time.Millisecond)); !ok {
		t.Fatal("a token came back after half a second")
	}
	var none *createRate
	if ok, _ := none.take(now); !ok {
		t.Fatal("no rate refused a create")
	}
}

// TestOldAPI serves the control plane as older E2B deployments did.
func TestOldAPI(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		old            string
		v1Connect      int
		wantV2Create   int
		wantV2Connect  int
		wantV1Create   int
		wantResumeCode int
	}{
		{OldAPIV1, http.StatusOK, http.StatusNotFound, http.StatusNotFound, http.StatusCreated, http.StatusConflict},
		{OldAPIResume, http.StatusNotFound, http.StatusNotFound, http.StatusNotFound, http.StatusCreated, http.StatusConflict},
	} {
		t.Run(tt.old, func(t *testing.T) {
			t.Parallel()
			rt := startRuntime(t, Config{OldAPI: tt.old})
			if r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "base"}); r.status != tt.wantV2Create {
				t.Errorf("v2 create: %d %s", r.status, r.body)
			}
			r := api(t, rt, "POST", "/sandboxes", map[string]any{"templateID": "base", "secure": true})
			if r.status != tt.wantV1Create {
				t.Fatalf("v1 create: %d %s", r.status, r.body)
			}
			var sb sandboxBody
			r.decode(t, &sb)
			if sb.EnvdAccessToken == "" {
				t.Errorf("v1 create with secure: no access token")
			}
			timeout := map[string]any{"timeout": 60}
			if r := api(t, rt, "POST", "/v2/sandboxes/"+sb.SandboxID+"/connect", timeout); r.status != tt.wantV2Connect {
				t.Errorf("v2 connect: %d %s", r.status, r.body)
			}
			if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/connect", timeout); r.status != tt.v1Connect {
				t.Errorf("v1 connect: %d %s", r.status, r.body)
			}
			if r := api(t, rt, "POST", "/sandboxes/"+sb.SandboxID+"/resume", timeout); r.status != tt.wantResumeCode {
				t.Errorf("resume of a running sandbox: %d %s", r.status, r.body)
			}
			if r := api(t, rt, "GET", "/v2/sandboxes", nil); r.status != http.StatusOK {
				t.Errorf("list v2: %d %s", r.status, r.body)
			}
		})
	}
}
