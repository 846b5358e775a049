package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExecuteOnce: a one-shot execution runs in a fresh sandbox of its own,
// returns its result with artifacts, and kills the sandbox whatever
// happened; the sandbox counts against the caller's cap and no session is
// recorded.
func TestExecuteOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		code    string
		execErr error
		cancel  bool
		wantErr error
		check   func(t *testing.T, res *ExecResult)
	}{
		{name: "result and artifacts", code: "print hi\nwrite /home/user/out.txt data", check: func(t *testing.T, res *ExecResult) {
			if !res.Success || res.Stdout != "hi\n" || len(res.Artifacts) != 1 || res.Artifacts[0].Path != "/home/user/out.txt" || res.Artifacts[0].DownloadURL == "" {
				t.Errorf("result %+v", res)
			}
		}},
		{name: "exception", code: "fail", check: func(t *testing.T, res *ExecResult) {
			if res.Success || res.Error == nil || res.Error.Name != "ValueError" {
				t.Errorf("result %+v", res)
			}
		}},
		{name: "provider failure", code: "x", execErr: fmt.Errorf("boom: %w", ErrUnavailable), wantErr: ErrUnavailable},
		{name: "caller gone", code: "x", cancel: true, wantErr: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.execErr != nil || c.cancel {
				r.sbx.execFn = func(ctx context.Context, id string, req ExecRequest, onEvent func(Event)) (*ExecResult, error) {
					if c.cancel {
						cancel()
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return nil, c.execErr
				}
			}
			res, err := r.m.ExecuteOnce(ctx, testKey.Tenant, testKey.Principal, OnceRequest{Code: c.code, TimeoutSecs: 30}, nil)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				c.check(t, res)
			}
			if live := r.sbx.live(); len(live) != 0 {
				t.Errorf("sandboxes left alive: %v", live)
			}
			if r.sbx.count("Create") != 1 || r.sbx.count("Kill") != 1 {
				t.Errorf("creates %d kills %d, want one each", r.sbx.count("Create"), r.sbx.count("Kill"))
			}
			spec := r.sbx.specs[0]
			if spec.Metadata[MetaOnce] != "true" || spec.Metadata[MetaPrincipal] != testKey.Principal || spec.Metadata[MetaSession] != "" ||
				spec.Timeout < 30*time.Second || spec.Template != "code-interpreter-v1" {
				t.Errorf("spec %+v", spec)
			}
			if sessions, _, _ := r.store.ListSessions(context.Background(), testKey.Tenant, testKey.Principal, 10, ""); len(sessions) != 0 {
				t.Errorf("a one-shot execution recorded sessions: %v", sessions)
			}
		})
	}
}

// TestExecuteOnceLimits: bad input is refused before any sandbox starts,
// and a caller at the cap gets ErrLimit.
func TestExecuteOnceLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		req    OnceRequest
		want   error
		detail string
	}{
		{"empty code", OnceRequest{}, ErrInvalid, "code is empty"},
		{"timeout too long", OnceRequest{Code: "x", TimeoutSecs: 901}, ErrInvalid, "timeoutSecs must be between 0 and 900"},
		{"bad template", OnceRequest{Code: "x", Template: "a b"}, ErrInvalid, "template must match"},
		{"bad env", OnceRequest{Code: "x", Envs: map[string]string{"1X": "v"}}, ErrInvalid, "envs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, Config{})
			_, err := r.m.ExecuteOnce(context.Background(), testKey.Tenant, testKey.Principal, c.req, nil)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.detail) || r.sbx.count("Create") != 0 {
				t.Fatalf("err = %v, creates %d", err, r.sbx.count("Create"))
			}
		})
	}
	t.Run("cap", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, Config{MaxLiveSandboxesPerTenant: 1})
		ctx := context.Background()
		r.mustStart(t, ctx, testKey, StartOptions{})
		if _, err := r.m.ExecuteOnce(ctx, testKey.Tenant, testKey.Principal, OnceRequest{Code: "print x"}, nil); !errors.Is(err, ErrLimit) {
			t.Fatalf("err = %v, want ErrLimit", err)
		}
		if len(r.sbx.live()) != 1 {
			t.Errorf("live %v", r.sbx.live())
		}
	})
}

// TestOrphanSweepSparesOneShot: the sweep leaves a one-shot sandbox alone
// while its execution may run, and kills it once that is surely over.
func TestOrphanSweepSparesOneShot(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	r.sbx.add(SandboxInfo{ID: "once-1", State: StateRunning, StartedAt: r.clock.Now(),
		Metadata: map[string]string{MetaStack: "stack-test", MetaTenant: testKey.Tenant, MetaPrincipal: testKey.Principal, MetaOnce: "true"}})
	r.clock.Advance(maxExecTimeout)
	if _, err := r.m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.sbx.live()) != 1 {
		t.Fatalf("a running one-shot sandbox was swept")
	}
	r.clock.Advance(time.Hour)
	if _, err := r.m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.sbx.live()) != 0 {
		t.Fatalf("a one-shot sandbox past its lifetime was kept")
	}
}
