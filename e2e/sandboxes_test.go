package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/faultproxy"
	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2blocal"
	"github.com/sessionbox/sessionbox/pkg/sandboxes"
	"github.com/sessionbox/sessionbox/pkg/session"
)

// runtime starts the local E2B runtime for one test.
func runtime(t *testing.T) *e2blocal.Runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := e2blocal.Start(ctx, withAgent(e2blocal.Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func adapter(t *testing.T, apiURL, sandboxURL string) *sandboxes.E2B {
	t.Helper()
	c, err := e2b.New(e2b.Config{APIKey: "e2b_0123456789abcdef", APIURL: apiURL, SandboxURL: sandboxURL,
		RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return sandboxes.New(c)
}

func create(t *testing.T, a *sandboxes.E2B, md map[string]string) session.SandboxInfo {
	t.Helper()
	info, err := a.Create(context.Background(), session.SandboxSpec{Template: "code-interpreter-v1",
		Timeout: 2 * time.Minute, Metadata: md, Envs: map[string]string{"SBX_TEST": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Kill(context.Background(), info.ID) })
	return info
}

func TestAgainstLocalRuntime(t *testing.T) {
	rt := runtime(t)
	a := adapter(t, rt.APIURL(), rt.SandboxURL())
	ctx := context.Background()
	info := create(t, a, map[string]string{"stack": "test-stack", "session": "s1"})

	t.Run("execute keeps state and reports results", func(t *testing.T) {
		if _, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "x = 20"}, nil); err != nil {
			t.Fatal(err)
		}
		var events []session.Event
		res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "print('hi')\nx * 2 + 2"}, func(e session.Event) { events = append(events, e) })
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || res.Stdout != "hi\n" || len(res.Results) != 1 || res.Results[0].Text != "42" || !res.Results[0].IsMainResult {
			t.Fatalf("result = %+v", res)
		}
		if len(events) < 2 || events[0].Stdout != "hi\n" {
			t.Fatalf("events = %+v", events)
		}
	})
	t.Run("execute reports exceptions", func(t *testing.T) {
		res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "1/0"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success || res.Error == nil || res.Error.Name != "ZeroDivisionError" {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("sandbox envs reach the kernel", func(t *testing.T) {
		res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "import os\nos.environ['SBX_TEST']"}, nil)
		if err != nil || len(res.Results) == 0 || res.Results[0].Text != "yes" {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
	t.Run("reset forgets variables", func(t *testing.T) {
		if err := a.ResetKernel(ctx, info.ID); err != nil {
			t.Fatal(err)
		}
		res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "x"}, nil)
		if err != nil || res.Error == nil || res.Error.Name != "NameError" {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
	t.Run("commands", func(t *testing.T) {
		var live bytes.Buffer
		res, err := a.RunCommand(ctx, info.ID, "echo out; echo err >&2; exit 3", 30*time.Second, func(e session.Event) { live.WriteString(e.Stdout) })
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 3 || res.Stdout != "out\n" || res.Stderr != "err\n" || live.String() != "out\n" {
			t.Fatalf("result = %+v, live %q", res, live.String())
		}
	})
	t.Run("files", func(t *testing.T) {
		data := make([]byte, 3<<20)
		_, _ = rand.Read(data)
		if err := a.WriteFile(ctx, info.ID, "/home/user/dir/blob.bin", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		st, err := a.StatFile(ctx, info.ID, "/home/user/dir/blob.bin")
		if err != nil || st.Size != int64(len(data)) || st.Type != "file" {
			t.Fatalf("stat = %+v, %v", st, err)
		}
		r, err := a.ReadFile(ctx, info.ID, "/home/user/dir/blob.bin")
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, _ = io.Copy(h, r)
		_ = r.Close()
		if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatal("read back different bytes")
		}
		entries, err := a.ListFiles(ctx, info.ID, "/home/user/dir", 1)
		if err != nil || len(entries) != 1 || entries[0].Name != "blob.bin" {
			t.Fatalf("list = %+v, %v", entries, err)
		}
		if err := a.RemoveFile(ctx, info.ID, "/home/user/dir"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.StatFile(ctx, info.ID, "/home/user/dir/blob.bin"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("stat after remove: %v, want ErrNotFound", err)
		}
		if _, err := a.ReadFile(ctx, info.ID, "/home/user/nope"); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("read missing: %v, want ErrNotFound", err)
		}
	})
	t.Run("get and list by metadata", func(t *testing.T) {
		got, err := a.Get(ctx, info.ID)
		if err != nil || got.State != session.StateRunning || got.Metadata["session"] != "s1" {
			t.Fatalf("get = %+v, %v", got, err)
		}
		listed, err := a.List(ctx, map[string]string{"stack": "test-stack"})
		if err != nil || len(listed) != 1 || listed[0].ID != info.ID {
			t.Fatalf("list = %+v, %v", listed, err)
		}
		none, err := a.List(ctx, map[string]string{"stack": "other"})
		if err != nil || len(none) != 0 {
			t.Fatalf("list other = %+v, %v", none, err)
		}
	})
	t.Run("pause, resume keeps state, pause twice is fine", func(t *testing.T) {
		if _, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "kept = 7"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := a.Pause(ctx, info.ID); err != nil {
			t.Fatal(err)
		}
		if err := a.Pause(ctx, info.ID); err != nil {
			t.Fatalf("second pause: %v", err)
		}
		if got, _ := a.Get(ctx, info.ID); got.State != session.StatePaused {
			t.Fatalf("state = %v", got.State)
		}
		if _, err := a.Connect(ctx, info.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		res, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "kept"}, nil)
		if err != nil || len(res.Results) == 0 || res.Results[0].Text != "7" {
			t.Fatalf("after resume = %+v, %v", res, err)
		}
	})
}

func TestSandboxGoneAndKill(t *testing.T) {
	rt := runtime(t)
	a := adapter(t, rt.APIURL(), rt.SandboxURL())
	ctx := context.Background()
	info := create(t, a, nil)

	// Killed behind the adapter's back: its cached handle now points at
	// nothing, and every call must say the sandbox is gone.
	other := adapter(t, rt.APIURL(), rt.SandboxURL())
	if err := other.Kill(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Execute(ctx, info.ID, session.ExecRequest{Code: "1"}, nil); !errors.Is(err, session.ErrSandboxGone) {
		t.Fatalf("execute on killed sandbox: %v, want ErrSandboxGone", err)
	}
	if _, err := a.Connect(ctx, info.ID, time.Minute); !errors.Is(err, session.ErrSandboxGone) {
		t.Fatalf("connect to killed sandbox: %v, want ErrSandboxGone", err)
	}
	if err := a.Kill(ctx, info.ID); err != nil {
		t.Fatalf("killing a gone sandbox must succeed: %v", err)
	}
	if _, err := a.RunCommand(ctx, "nosuchsandbox0000000", "true", time.Second, nil); !errors.Is(err, session.ErrSandboxGone) {
		t.Fatalf("command on unknown sandbox: %v", err)
	}
}

func TestProviderOutage(t *testing.T) {
	rt := runtime(t)
	f := faultproxy.New(t, rt.APIURL())
	a := adapter(t, f.URL, rt.SandboxURL())
	ctx := context.Background()

	cases := []struct {
		name   string
		status int
		want   error
	}{
		{"503 busy", http.StatusServiceUnavailable, session.ErrUnavailable},
		{"500 error", http.StatusInternalServerError, session.ErrUnavailable},
		{"429 rate limited", http.StatusTooManyRequests, session.ErrLimit},
		{"401 bad key", http.StatusUnauthorized, session.ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Set(faultproxy.Fault{Status: c.status})
			defer f.Heal()
			_, err := a.Create(ctx, session.SandboxSpec{Template: "base", Timeout: time.Minute})
			if !errors.Is(err, c.want) {
				t.Fatalf("create: %v, want %v", err, c.want)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		f.Set(faultproxy.Fault{Hang: 5 * time.Second})
		defer f.Heal()
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := a.Get(cctx, "whatever00000000000"); !errors.Is(err, session.ErrTimeout) {
			t.Fatalf("get: %v, want ErrTimeout", err)
		}
	})
	t.Run("recovers after the outage", func(t *testing.T) {
		info := create(t, a, nil)
		if _, err := a.Get(ctx, info.ID); err != nil {
			t.Fatal(err)
		}
	})
}
