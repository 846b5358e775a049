package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/buildstamp"
)

// stampedAgents builds cmd/sessionbox-agent stamped "one" and "two" and
// unstamped into dir, as `make build` does, in parallel.
func stampedAgents(t *testing.T, dir string) (one, two, none string) {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its own toolchain first
	if err != nil {
		t.Fatalf("no go toolchain: %v", err)
	}
	builds := map[string]string{"one": "-X " + buildstamp.Symbol + "=one", "two": "-X " + buildstamp.Symbol + "=two", "none": ""}
	var wg sync.WaitGroup
	errs := make(chan string, len(builds))
	for name, ldflags := range builds {
		wg.Go(func() {
			cmd := exec.Command(goBin, "build", "-ldflags", ldflags, "-o", filepath.Join(dir, name), "github.com/sessionbox/sessionbox/cmd/sessionbox-agent")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- name + ": " + err.Error() + "\n" + string(out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	return filepath.Join(dir, "one"), filepath.Join(dir, "two"), filepath.Join(dir, "none")
}

// TestChooseAgent: an explicit --agent is refused only when provably from
// other sources, naming both paths; the agent beside sessionbox is used
// only when provably from the same sources, else passed over with a
// warning (or quietly, when there is none or this build is unstamped).
func TestChooseAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("links the agent three times")
	}
	t.Parallel()
	bins := t.TempDir()
	one, two, none := stampedAgents(t, bins)
	script := filepath.Join(bins, "wrapper.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// besides puts a copy of src (with mode) beside a sessionbox in a new
	// dir and returns that sessionbox's path.
	beside := func(t *testing.T, src string, mode os.FileMode) string {
		dir := t.TempDir()
		if src != "" {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, agentName), b, mode); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "sessionbox")
	}
	goVer := runtime.Version()
	cases := []struct {
		name      string
		explicit  string
		neighbour string      // copied beside self; "" none
		mode      os.FileMode // the neighbour's
		stamp     string      // self's
		goVersion string      // self's; "" is this toolchain's
		want      string      // "neighbour" for the copy beside self
		warn      string      // in the warning; "" wants none
		err       string      // in the error; "" wants none
	}{
		{name: "explicit, matching", explicit: one, stamp: "one", want: one},
		{name: "explicit, other sources", explicit: two, stamp: "one", err: "built from other sources"},
		{name: "explicit, other toolchain", explicit: one, stamp: "one", goVersion: "go1.0", err: "built from other sources"},
		{name: "explicit, unstamped agent", explicit: none, stamp: "one", want: none},
		{name: "explicit, unstamped self", explicit: two, want: two},
		{name: "explicit, not a Go binary", explicit: script, stamp: "one", want: script},
		{name: "explicit, missing", explicit: filepath.Join(bins, "missing"), stamp: "one", err: "no such file"},
		{name: "neighbour, matching", neighbour: one, mode: 0o755, stamp: "one", want: "neighbour"},
		{name: "neighbour, other sources", neighbour: two, mode: 0o755, stamp: "one", warn: "built from other sources"},
		{name: "neighbour, other toolchain", neighbour: one, mode: 0o755, stamp: "one", goVersion: "go1.0", warn: "built from other sources"},
		{name: "neighbour, unstamped", neighbour: none, mode: 0o755, stamp: "one", warn: "no build stamp"},
		{name: "neighbour, not executable", neighbour: one, mode: 0o644, stamp: "one", warn: "not an executable file"},
		{name: "neighbour, not a Go binary", neighbour: script, mode: 0o755, stamp: "one", warn: "build info"},
		{name: "neighbour, missing", stamp: "one"},
		{name: "unstamped self ignores a neighbour", neighbour: one, mode: 0o755},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			self := beside(t, c.neighbour, c.mode)
			gv := c.goVersion
			if gv == "" {
				gv = goVer
			}
			got, err := chooseAgent(c.explicit, self, c.stamp, gv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.explicit) {
					t.Fatalf("chooseAgent = %+v, %v; want an error naming %s and %q", got, err, c.explicit, c.err)
				}
				if c.stamp != "" && strings.Contains(c.err, "other sources") && !strings.Contains(err.Error(), self) {
					t.Fatalf("error %q does not name this binary %s", err, self)
				}
				return
			}
			want := c.want
			if want == "neighbour" {
				want = filepath.Join(filepath.Dir(self), agentName)
			}
			if err != nil || got.path != want {
				t.Fatalf("chooseAgent = %+v, %v; want path %q", got, err, want)
			}
			if c.warn == "" && got.warning != "" || c.warn != "" && (!strings.Contains(got.warning, c.warn) || !strings.Contains(got.warning, agentName)) {
				t.Fatalf("warning %q; want one naming the neighbour and %q", got.warning, c.warn)
			}
		})
	}
}

// TestAgentFlags: --agent and its variables reach the runtime's Agent (as
// given: agentFor resolves it when the command runs) for serve and runtime
// alike.
func TestAgentFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, env, want string
		args            []string
	}{
		{"default", "", "", nil},
		{"from the environment", "/opt/agent", "/opt/agent", nil},
		{"the flag wins", "/opt/agent", "/bin/agent", []string{"--agent", "/bin/agent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o, serr := serveFlags(c.args, func(k string) string { return map[string]string{"SESSIONBOX_AGENT": c.env}[k] })
			cfg, rerr := runtimeFlags(c.args, func(k string) string { return map[string]string{"E2BLOCAL_AGENT": c.env}[k] })
			if serr != nil || rerr != nil || o.agent != c.want || cfg.Agent != c.want {
				t.Fatalf("serve %q (%v), runtime %q (%v); want %q", o.agent, serr, cfg.Agent, rerr, c.want)
			}
		})
	}
}
