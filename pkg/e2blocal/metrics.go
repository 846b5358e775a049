//go:build linux

package e2blocal

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSample is the CPU time a sandbox had used at a moment, and where the
// figure came from: rates are taken only between figures of one source.
type cpuSample struct {
	at     time.Time
	used   time.Duration
	cgroup bool
}

// metric samples the sandbox now: memory from its cgroup (or the RSS of its
// tree), CPU from its cgroup's accounting (cpu.stat's usage_usec on v2,
// which counts exited processes too) or else from /proc (utime+stime of the
// tree's live processes), as a rate since the last sample, and disk from
// its home (statfs of its image, or a walk of its directory that is a lower
// bound past diskScanEntries files).
func (s *sandbox) metric() metricBody {
	now := time.Now().UTC()
	m := metricBody{
		Timestamp: now, TimestampUnix: now.Unix(), CPUCount: s.rt.cpuCount(),
		MemTotal: s.rt.cfg.MemoryBytes, DiskTotal: int64(s.rt.diskMB()) << 20,
	}
	cur := cpuSample{at: now}
	var pids []int
	if s.cg != nil {
		if used, cache, err := s.cg.Memory(); err == nil {
			m.MemUsed, m.MemCache = used, cache
		}
		if used, err := s.cg.CPUUsage(); err == nil {
			cur.used, cur.cgroup = used, true
		}
		// One read of the group's member list; walking the tree reads a
		// children file per thread of every process (~6 ms for an agent).
		if !cur.cgroup {
			pids, _ = s.cg.Procs()
		}
	}
	if !cur.cgroup {
		if len(pids) == 0 {
			pids = jail.ProcessTree(s.proc.Cmd.Process.Pid)
		}
		var ticks int64
		for _, pid := range pids {
			utime, stime, rss := procStat(pid)
			ticks += utime + stime
			if s.cg == nil {
				m.MemUsed += rss
			}
		}
		cur.used = time.Duration(ticks) * time.Second / clockTicks
	}
	s.mu.Lock()
	prev := s.cpu
	s.cpu = cur
	s.mu.Unlock()
	m.CPUUsedPct = cpuPercent(prev, cur, m.CPUCount)
	m.DiskUsed, m.DiskTotal = s.disk(m.DiskTotal)
	return m
}

// cpuPercent is the CPU use between two samples in percent of count CPUs:
// zero without an earlier sample of the same source, or when the figure
// went down (a process of the tree exited, taking its /proc times along).
func cpuPercent(prev, cur cpuSample, count int) float64 {
	el := cur.at.Sub(prev.at)
	if prev.at.IsZero() || prev.cgroup != cur.cgroup || el <= 0 || cur.used < prev.used || count < 1 {
		return 0
	}
	return min(float64(cur.used-prev.used)/float64(el)/float64(count)*100, 100)
}

// disk is the home's use and size: exact and cheap from statfs when it is
// an image, else a bounded walk against the advertised size, reused for
// diskSampleAge. Callers hold s.metrics.mu.
func (s *sandbox) disk(advertised int64) (used, total int64) {
	if s.homeMounted {
		if used, total, err := jail.HomeStatfs(s.rt.fs.HomeDir(s.hostKey)); err == nil {
			return used, total
		}
	}
	if !s.diskAt.IsZero() && time.Since(s.diskAt) < diskSampleAge {
		return s.diskUsedCached, advertised
	}
	used, _ = dirSize(s.rt.fs.HomeDir(s.hostKey), diskScanEntries)
	s.diskAt, s.diskUsedCached = time.Now(), used
	return used, advertised
}

func (rt *Runtime) cpuCount() int {
	n := rt.cfg.CPUPercent / 100
	if n < 1 {
		n = 1
	}
	return n
}

// procStat reads utime, stime (ticks) and RSS (bytes) of one process.
func procStat(pid int) (utime, stime, rss int64) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0
	}
	// The command name may contain spaces and parentheses; fields start
	// after the last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, 0, 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 22 {
		return 0, 0, 0
	}
	utime, _ = strconv.ParseInt(f[11], 10, 64)
	stime, _ = strconv.ParseInt(f[12], 10, 64)
	pages, _ := strconv.ParseInt(f[21], 10, 64)
	return utime, stime, pages * int64(os.Getpagesize())
}

// diskScanEntries bounds the work of one disk sample: a home holding
// millions of files must not cost the host unbounded CPU per metrics call.
const diskScanEntries = 100_000

// dirSize sums the sizes of the regular files below dir, looking at no more
// than limit directory entries; complete reports whether it saw them all,
// otherwise total is what the first limit entries hold (a lower bound).
// Directories are read in batches, so one huge directory costs no more
// than its share of the budget, and symlinks are never followed.
func dirSize(dir string, limit int) (total int64, complete bool) {
	left := limit
	stack := []string{dir}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		sub, ok := sizeOneDir(d, &left, &total)
		if !ok {
			return total, false
		}
		stack = append(stack, sub...)
	}
	return total, true
}

// sizeOneDir adds the regular files of d to total and returns its
// subdirectories; ok is false once the entry budget ran out.
func sizeOneDir(d string, left *int, total *int64) (sub []string, ok bool) {
	f, err := os.OpenFile(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, true // unreadable (chmod 000 by the sandbox) or gone: skip it
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if *left <= 0 {
				return sub, false
			}
			*left--
			switch {
			case e.IsDir():
				sub = append(sub, filepath.Join(d, e.Name()))
			case e.Type().IsRegular():
				if info, err := e.Info(); err == nil {
					*total += info.Size()
				}
			}
		}
		if err != nil || len(ents) == 0 {
			return sub, true
		}
	}
}
