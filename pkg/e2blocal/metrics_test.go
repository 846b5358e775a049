//go:build linux

package e2blocal

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDirSizeIsBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 1000 one-byte files in one directory, bigger files nested below.
	for i := range 1000 {
		write("flat/f"+strconv.Itoa(i), 1)
	}
	write("a/b/c/big", 5000)
	write("top", 300)
	if err := os.Symlink("/usr", filepath.Join(dir, "usr-link")); err != nil {
		t.Fatal(err)
	}
	const full = 1000 + 5000 + 300
	// Entries: flat, a, top, usr-link, 1000 in flat, b, c, big.
	const entries = 4 + 1000 + 3
	cases := []struct {
		name         string
		limit        int
		wantComplete bool
	}{
		{"ample budget", 1 << 20, true},
		{"exact budget", entries, true},
		{"one short", entries - 1, false},
		{"inside the flat directory", 500, false},
		{"nothing", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			total, complete := dirSize(dir, c.limit)
			if complete != c.wantComplete {
				t.Fatalf("complete = %v, want %v (total %d)", complete, c.wantComplete, total)
			}
			if complete && total != full {
				t.Fatalf("total %d, want %d", total, full)
			}
			// Each entry adds at most one file, so a cut-short walk cannot
			// exceed what its budget could have seen.
			if !complete && (total >= full || c.limit == 0 && total != 0) {
				t.Fatalf("cut-short walk counted %d of %d", total, full)
			}
		})
	}
}

func BenchmarkDirSizeHugeDirectory(b *testing.B) {
	dir := b.TempDir()
	for i := range 20000 {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, complete := dirSize(dir, 1000); complete {
			b.Fatal("a 1000-entry budget covered 20000 files")
		}
	}
}

func TestMetricRingKeepsTheNewest(t *testing.T) {
	t.Parallel()
	r := newMetricRing(3)
	for i := range int64(5) {
		r.addLocked(metricBody{TimestampUnix: 100 + i})
	}
	cases := []struct {
		name       string
		start, end int64
		want       []int64
	}{
		{"all", 0, math.MaxInt64, []int64{102, 103, 104}},
		{"inside", 103, 104, []int64{103, 104}},
		{"one second", 102, 102, []int64{102}},
		{"evicted", 100, 101, nil},
		{"future", 200, 300, nil},
		{"reversed", 104, 102, nil},
	}
	for _, c := range cases {
		var got []int64
		for _, m := range r.between(c.start, c.end) {
			got = append(got, m.TimestampUnix)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if m, ok := r.newestLocked(); !ok || m.TimestampUnix != 104 {
		t.Errorf("newest %v %v", m, ok)
	}
}

// TestMetricsRange: running sandboxes are sampled on an interval and
// GET /sandboxes/{id}/metrics?start=&end= answers those inside the range.
func TestMetricsRange(t *testing.T) {
	rt := startRuntime(t, Config{metricsInterval: 200 * time.Millisecond})
	sb := createSandbox(t, rt, nil)
	path := "/sandboxes/" + sb.SandboxID + "/metrics"
	get := func(query string) []metricBody {
		t.Helper()
		r := api(t, rt, "GET", path+query, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET metrics%s: %d %s", query, r.status, r.body)
		}
		var ms []metricBody
		r.decode(t, &ms)
		return ms
	}
	// Wait for samples spanning at least two whole seconds.
	var all []metricBody
	deadline := time.Now().Add(20 * time.Second)
	for {
		all = get("")
		if len(all) >= 3 && all[len(all)-1].TimestampUnix >= all[0].TimestampUnix+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples did not accumulate: %+v", all)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp.Before(all[i-1].Timestamp) {
			t.Fatalf("samples out of order: %+v", all)
		}
	}
	first := all[0].TimestampUnix
	var inFirst int
	for _, m := range all {
		if m.TimestampUnix == first {
			inFirst++
		}
	}
	s := strconv.FormatInt(first, 10)
	if got := get("?start=" + s + "&end=" + s); len(got) != inFirst {
		t.Errorf("range [%s, %s]: %d samples, want %d", s, s, len(got), inFirst)
	}
	later := get("?start=" + strconv.FormatInt(first+1, 10))
	if len(later) == 0 || later[0].TimestampUnix <= first {
		t.Errorf("start only: %+v", later)
	}
	future := strconv.FormatInt(time.Now().Unix()+3600, 10)
	for _, q := range []string{"?start=" + future, "?start=1&end=2", "?start=" + future + "&end=" + s} {
		if got := get(q); len(got) != 0 {
			t.Errorf("empty range %s: %+v", q, got)
		}
	}
	for _, q := range []string{"?start=yesterday", "?end=-5", "?start=1.5"} {
		r := api(t, rt, "GET", path+q, nil)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "unix timestamp") {
			t.Errorf("GET metrics%s: %d %s", q, r.status, r.body)
		}
	}
}
