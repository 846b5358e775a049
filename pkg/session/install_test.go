package session

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInstallCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  InstallRequest
		user bool
		want string
	}{
		{"plain", InstallRequest{Packages: []string{"pandas==2.2.2", "requests[socks]>=2.31,<3"}}, false,
			`python3 -m pip install --no-input --disable-pip-version-check -- 'pandas==2.2.2' 'requests[socks]>=2.31,<3'`},
		{"index", InstallRequest{Packages: []string{"x"}, IndexURL: "http://127.0.0.1:8080/simple/"}, false,
			`python3 -m pip install --no-input --disable-pip-version-check --index-url 'http://127.0.0.1:8080/simple/' -- 'x'`},
		{"user", InstallRequest{Packages: []string{"x"}}, true,
			`PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-input --disable-pip-version-check --user -- 'x'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := installCommand(tt.req, tt.user); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestShellQuoteWithShell runs quoted words through a real shell: whatever
// goes in comes out as one argument, unexpanded.
func TestShellQuoteWithShell(t *testing.T) {
	t.Parallel()
	words := []string{"plain", "a b", "x; rm -rf /", "$(id)", "`id`", "it's", "'", "\"q\"", "a\\b", "*", "~", "$HOME", "\n"}
	var cmd strings.Builder
	cmd.WriteString("printf '%s\\0'")
	for _, w := range words {
		cmd.WriteString(" " + shellQuote(w))
	}
	out, err := exec.CommandContext(context.Background(), "/bin/sh", "-c", cmd.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if strings.Join(got, "|") != strings.Join(words, "|") {
		t.Fatalf("shell saw %q, want %q", got, words)
	}
}

func TestInstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("success streams output", func(t *testing.T) {
		r := newRig(t, Config{})
		var streamed strings.Builder
		res, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"tiny==1.0"}}, func(e Event) { streamed.WriteString(e.Stdout) })
		if err != nil || !res.Success || res.ExitCode != 0 || res.Stdout != "Successfully installed\n" || streamed.String() != res.Stdout {
			t.Fatalf("%+v %v streamed %q", res, err, streamed.String())
		}
		if len(r.sbx.lastCmd) != 1 || !strings.HasSuffix(r.sbx.lastCmd[0], "-- 'tiny==1.0'") {
			t.Fatalf("commands %q", r.sbx.lastCmd)
		}
	})
	t.Run("externally managed falls back to a user install", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.cmdFn = func(_ context.Context, cmd string) (ShellOutcome, error) {
			if !strings.Contains(cmd, "--user") {
				return ShellOutcome{ExitCode: 1, Stderr: "error: externally-managed-environment\n"}, nil
			}
			return ShellOutcome{Stdout: "ok\n"}, nil
		}
		res, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"x"}}, nil)
		if err != nil || !res.Success || len(r.sbx.lastCmd) != 2 {
			t.Fatalf("%+v %v %q", res, err, r.sbx.lastCmd)
		}
	})
	t.Run("the externally managed refusal is neither streamed nor counted", func(t *testing.T) {
		r := newRig(t, Config{MaxOutputBytes: 160})
		refusal := "error: externally-managed-environment\n\n× This environment is externally managed\n" +
			strings.Repeat("╰─> To install Python packages system-wide, try apt install\n", 20)
		warning := "WARNING: The script tiny is installed in '/home/user/.local/bin'\n"
		r.sbx.cmdFn = func(_ context.Context, cmd string) (ShellOutcome, error) {
			if !strings.Contains(cmd, "--user") {
				return ShellOutcome{ExitCode: 1, Stderr: refusal}, nil
			}
			return ShellOutcome{Stdout: "ok\n", Stderr: warning}, nil
		}
		var mu sync.Mutex
		var streamed strings.Builder
		res, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"tiny"}}, func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			streamed.WriteString(e.Stderr)
		})
		if err != nil || !res.Success || res.Truncated {
			t.Fatalf("%+v %v", res, err)
		}
		if strings.Contains(streamed.String(), "This environment") || !strings.HasSuffix(streamed.String(), warning) {
			t.Fatalf("streamed stderr %q", streamed.String())
		}
		if res.Stderr != streamed.String() || strings.Count(res.Stderr, "\n") != 2 {
			t.Fatalf("result stderr %q, streamed %q", res.Stderr, streamed.String())
		}
	})
	t.Run("other stderr of the first attempt is streamed", func(t *testing.T) {
		r := newRig(t, Config{AllowInternetAccess: true})
		msg := "ERROR: No matching distribution found for nope\n"
		r.sbx.cmdFn = func(context.Context, string) (ShellOutcome, error) {
			return ShellOutcome{ExitCode: 1, Stderr: msg}, nil
		}
		var streamed strings.Builder
		if _, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"nope"}}, func(e Event) { streamed.WriteString(e.Stderr) }); err != nil {
			t.Fatal(err)
		}
		if streamed.String() != msg {
			t.Fatalf("streamed %q", streamed.String())
		}
	})
	t.Run("offline sandboxes say why PyPI failed", func(t *testing.T) {
		pipErr := "ERROR: Could not find a version that satisfies the requirement nope\n"
		for _, c := range []struct {
			name     string
			internet bool
			index    string
			exit     int
			hint     bool
		}{
			{"offline, PyPI, failed", false, "", 1, true},
			{"offline, PyPI, succeeded", false, "", 0, false},
			{"offline, own index, failed", false, "http://127.0.0.1:8000/simple", 1, false},
			{"online, PyPI, failed", true, "", 1, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := newRig(t, Config{AllowInternetAccess: c.internet})
				r.sbx.cmdFn = func(context.Context, string) (ShellOutcome, error) {
					return ShellOutcome{ExitCode: c.exit, Stderr: pipErr}, nil
				}
				var streamed strings.Builder
				res, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"nope"}, IndexURL: c.index},
					func(e Event) { streamed.WriteString(e.Stderr) })
				if err != nil {
					t.Fatal(err)
				}
				want := pipErr
				if c.hint {
					want += "note: sandboxes here have no internet access, so PyPI is out of reach; " +
						"pass an indexUrl the sandbox can reach, or turn internet access on\n"
				}
				if res.Stderr != want || streamed.String() != want {
					t.Fatalf("stderr %q, streamed %q, want %q", res.Stderr, streamed.String(), want)
				}
			})
		}
	})
	t.Run("a provider that stops answering times out", func(t *testing.T) {
		r := newRig(t, Config{ExecTimeout: 20 * time.Millisecond, CallBackstopSlack: 10 * time.Millisecond})
		r.sbx.cmdFn = func(ctx context.Context, cmd string) (ShellOutcome, error) {
			<-ctx.Done() // never answers on its own
			return ShellOutcome{}, ctx.Err()
		}
		done := make(chan error, 1)
		go func() {
			_, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"x"}}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want timeout", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("install waited on a silent provider with no backstop")
		}
	})
	t.Run("pip failure is a result", func(t *testing.T) {
		r := newRig(t, Config{})
		r.sbx.cmdFn = func(_ context.Context, cmd string) (ShellOutcome, error) {
			return ShellOutcome{ExitCode: 1, Stderr: "ERROR: No matching distribution found for nope\n"}, nil
		}
		res, err := r.m.Install(ctx, testKey, InstallRequest{Packages: []string{"nope"}}, nil)
		if err != nil || res.Success || res.ExitCode != 1 || !strings.Contains(res.Stderr, "No matching") {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("invalid input never reaches the sandbox", func(t *testing.T) {
		r := newRig(t, Config{})
		bad := []InstallRequest{
			{},
			{Packages: []string{"x; rm -rf /"}},
			{Packages: []string{"ok", "--index-url=http://evil"}},
			{Packages: []string{"x"}, IndexURL: "file:///etc"},
			{Packages: []string{"x"}, IndexURL: "http://a/$(id)"},
			{Packages: []string{"x"}, IndexURL: "http://a/ b"},
			{Packages: make([]string, maxPackages+1)},
		}
		for _, req := range bad {
			if _, err := r.m.Install(ctx, testKey, req, nil); !errors.Is(err, ErrInvalid) {
				t.Fatalf("%+v: err = %v", req, err)
			}
		}
		if r.sbx.count("Create") != 0 || r.sbx.count("RunCommand") != 0 {
			t.Fatal("invalid install touched the provider")
		}
	})
}
