//go:build linux

package e2blocal

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// cpuWeightOf reads sandbox id's CPU weight in cpu.weight units (within
// one of what was set: v1's cpu.shares round the other way).
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

// weighs reports whether got is want within the rounding of cpu.shares.
func weighs(got, want int) bool { return got >= want-1 && got <= want+1 }

// sandboxCPU is the CPU time sandbox id has used: its cgroup's figure, or
// the sum over its group's live tasks where the group keeps none (v1).
func sandboxCPU(t testing.TB, rt *Runtime, id string) time.Duration {
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

// TestCPUSharedPerPrincipal: the three sandboxes of one principal weigh
// a third each and another principal's one sandbox a whole share; when one
// of the three ends, its share goes to the other two. What the weights give
// under contention is measured by BenchmarkCPUSharePerPrincipal.
func TestCPUSharedPerPrincipal(t *testing.T) {
	rt := startRuntime(t, Config{})
	if rt.cgroups == nil {
		t.Skip("no cgroups here: CPU weights are not enforced")
	}
	many, lone := principalSandboxes(t, rt)
	for _, sb := range many {
		if got := cpuWeightOf(t, rt, sb.SandboxID); !weighs(got, jail.DefaultCPUWeight/3) {
			t.Fatalf("one of alice's three sandboxes weighs %d, want %d", got, jail.DefaultCPUWeight/3)
		}
	}
	if got := cpuWeightOf(t, rt, lone.SandboxID); !weighs(got, jail.DefaultCPUWeight) {
		t.Fatalf("bob's sandbox weighs %d, want %d", got, jail.DefaultCPUWeight)
	}
	if r := api(t, rt, http.MethodDelete, "/sandboxes/"+many[0].SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", r.status, r.body)
	}
	if got := cpuWeightOf(t, rt, many[1].SandboxID); !weighs(got, jail.DefaultCPUWeight/2) {
		t.Fatalf("alice's remaining sandbox weighs %d, want %d", got, jail.DefaultCPUWeight/2)
	}
	if got := cpuWeightOf(t, rt, lone.SandboxID); !weighs(got, jail.DefaultCPUWeight) {
		t.Fatalf("bob's sandbox weighs %d, want %d", got, jail.DefaultCPUWeight)
	}
}

// principalSandboxes creates three sandboxes of alice's and one of bob's.
func principalSandboxes(t testing.TB, rt *Runtime) (many []sandboxBody, lone sandboxBody) {
	create := func(principal string) sandboxBody {
		return createSandbox(t, rt, map[string]any{"templateID": "base",
			"metadata": map[string]string{"tenant": "t1", "principal": principal, "session": principal}})
	}
	return []sandboxBody{create("alice"), create("alice"), create("alice")}, create("bob")
}

// BenchmarkCPUSharePerPrincipal runs three CPU burners of one principal
// and one of another, all contending, and reports the lone burner's CPU
// time over the three's (bob/alice): about 1 with per-principal weights,
// about 1/3 without, whatever else loads the machine (both sides are
// measured over the same window).
func BenchmarkCPUSharePerPrincipal(b *testing.B) {
	rt := startRuntime(b, Config{})
	if rt.cgroups == nil {
		b.Skip("no cgroups here: CPU weights are not enforced")
	}
	many, lone := principalSandboxes(b, rt)
	ctx, cancel := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	all := append([]sandboxBody{lone}, many...)
	for _, sb := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runIn(ctx, rt, sb, "exec timeout 600 sh -c 'while :; do :; done'")
		}()
	}
	usage := func() (bob, alice time.Duration) {
		bob = sandboxCPU(b, rt, lone.SandboxID)
		for _, sb := range many {
			alice += sandboxCPU(b, rt, sb.SandboxID)
		}
		return bob, alice
	}
	testwait.Until(b, time.Minute, func() error {
		for _, sb := range all {
			if sandboxCPU(b, rt, sb.SandboxID) <= 50*time.Millisecond {
				return fmt.Errorf("sandbox %s has not started burning", sb.SandboxID)
			}
		}
		return nil
	})
	b.ResetTimer()
	var ratios []float64
	for range b.N {
		l0, m0 := usage()
		time.Sleep(2 * time.Second)
		l1, m1 := usage()
		ratios = append(ratios, float64(l1-l0)/float64(m1-m0))
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "bob/alice")
}
