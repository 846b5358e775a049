//go:build linux

package e2blocal

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

type cpuSample struct {
	at    time.Time
	ticks int64
}

// metric samples the sandbox now: memory from its cgroup (or the RSS of its
// tree), CPU from /proc (utime+stime of the tree since the last sample) and
// disk from its home (statfs of its image, or a walk of its directory that
// is a lower bound past diskScanEntries files).
func (s *sandbox) metric() metricBody {
	now := time.Now().UTC()
	m := metricBody{
		Timestamp: now, TimestampUnix: now.Unix(), CPUCount: s.rt.cpuCount(),
		MemTotal: s.rt.cfg.MemoryBytes, DiskTotal: int64(s.rt.diskMB()) << 20,
	}
	var pids []int
	if s.cg != nil {
		if used, cache, err := s.cg.memory(); err == nil {
			m.MemUsed, m.MemCache = used, cache
		}
		// One read of the group's member list; walking the tree reads a
		// children file per thread of every process (~6 ms for an agent).
		pids, _ = s.cg.procs()
	}
	if len(pids) == 0 {
		pids = processTree(s.proc.cmd.Process.Pid)
	}
	var ticks int64
	for _, pid := range pids {
		utime, stime, rss := procStat(pid)
		ticks += utime + stime
		if s.cg == nil {
			m.MemUsed += rss
		}
	}
	s.mu.Lock()
	prev := s.cpu
	s.cpu = cpuSample{at: now, ticks: ticks}
	s.mu.Unlock()
	if !prev.at.IsZero() {
		if el := now.Sub(prev.at).Seconds(); el > 0 && ticks >= prev.ticks {
			m.CPUUsedPct = float64(ticks-prev.ticks) / clockTicks / el / float64(m.CPUCount) * 100
		}
	}
	m.DiskUsed, m.DiskTotal = s.disk(m.DiskTotal)
	return m
}

// disk is the home's use and size: exact and cheap from statfs when it is
// an image, else a bounded walk against the advertised size, reused for
// diskSampleAge. Callers hold s.metrics.mu.
func (s *sandbox) disk(advertised int64) (used, total int64) {
	if s.homeMounted {
		if used, total, err := homeStatfs(s.rt.fs.homeDir(s.id)); err == nil {
			return used, total
		}
	}
	if !s.diskAt.IsZero() && time.Since(s.diskAt) < diskSampleAge {
		return s.diskUsedCached, advertised
	}
	used, _ = dirSize(s.rt.fs.homeDir(s.id), diskScanEntries)
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
