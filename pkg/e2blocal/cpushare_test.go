//go:build linux

package e2blocal

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// cpuWeightOf reads sandbox id's CPU weight in cpu.weight units.
func cpuWeightOf(t *testing.T, rt *Runtime, id string) int {
	t.Helper()
	var path string
	scale := func(v int) int { return v }
	switch g := rt.lookup(id).cg.(type) {
	case *jail.V1Group:
		path = filepath.Join(g.Dirs["cpu"], "cpu.shares")
		scale = func(v int) int { return v * jail.DefaultCPUWeight / 1024 }
	case *jail.V2Group:
		path = filepath.Join(g.Dir, "cpu.weight")
	default:
		t.Fatalf("cgroup of type %T", g)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return scale(v)
}

// sandboxCPU is the CPU time sandbox id has used: its cgroup's figure, or
// the sum over its group's live tasks where the group keeps none (v1).
func sandboxCPU(t *testing.T, rt *Runtime, id string) time.Duration {
	t.Helper()
	s := rt.lookup(id)
	if s == nil || s.cg == nil {
		t.Fatalf("sandbox %s: gone or without a cgroup", id)
	}
	if used, err := s.cg.CPUUsage(); err == nil {
		return used
	}
	pids, err := s.cg.Procs()
	if err != nil {
		t.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		u, st, _ := procStat(pid)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// TestCPUSharedPerPrincipal: three CPU burners of one principal and one of
// another, all contending: the lone principal's burner gets about what the
// three get together, not a quarter of the whole. Measured as the ratio of
// CPU time used over the same window, so a loaded machine slows both sides
// alike; without per-principal weights the ratio is about 1/3.
func TestCPUSharedPerPrincipal(t *testing.T) {
	rt := startRuntime(t, Config{})
	if rt.cgroups == nil {
		t.Skip("no cgroups here: CPU weights are not enforced")
	}
	create := func(principal string) sandboxBody {
		return createSandbox(t, rt, map[string]any{"templateID": "base",
			"metadata": map[string]string{"tenant": "t1", "principal": principal, "session": principal}})
	}
	many := []sandboxBody{create("alice"), create("alice"), create("alice")}
	lone := create("bob")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, sb := range append([]sandboxBody{lone}, many...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runIn(ctx, rt, sb, "exec timeout 180 sh -c 'while :; do :; done'")
		}()
	}
	usage := func() (bob, alice time.Duration) {
		bob = sandboxCPU(t, rt, lone.SandboxID)
		for _, sb := range many {
			alice += sandboxCPU(t, rt, sb.SandboxID)
		}
		return bob, alice
	}
	// Every burner must be running before the window opens.
	deadline := time.Now().Add(time.Minute)
	for {
		running := 0
		for _, sb := range append([]sandboxBody{lone}, many...) {
			if sandboxCPU(t, rt, sb.SandboxID) > 50*time.Millisecond {
				running++
			}
		}
		if running == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 burners running after a minute", running)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The window closes once a second of CPU time was shared out (two
	// seconds on an idle machine; longer on a loaded one, where the
	// runtime's groups get a sliver), so tick-sized rounding stays small.
	l0, m0 := usage()
	start := time.Now()
	var bob, alice time.Duration
	for bob+alice < time.Second && time.Since(start) < time.Minute {
		time.Sleep(250 * time.Millisecond)
		l1, m1 := usage()
		bob, alice = l1-l0, m1-m0
	}
	ratio := float64(bob) / float64(alice)
	t.Logf("over %v: bob's one burner %v, alice's three %v, ratio %.2f", time.Since(start).Round(time.Millisecond), bob, alice, ratio)
	if alice <= 0 || ratio < 0.7 {
		t.Fatalf("bob's burner got %.2f of what alice's three got, want about 1 (at least 0.7)", ratio)
	}
	// Alice's share goes to her remaining sandboxes when one ends.
	if r := api(t, rt, http.MethodDelete, "/sandboxes/"+many[0].SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	if got := cpuWeightOf(t, rt, many[1].SandboxID); got != 50 {
		t.Fatalf("alice's remaining sandbox weighs %d, want 50", got)
	}
	if got := cpuWeightOf(t, rt, lone.SandboxID); got != 100 {
		t.Fatalf("bob's sandbox weighs %d, want 100", got)
	}
}
