package e2blocal

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// disk from its home directory.
func (s *sandbox) metric() metricBody {
	now := time.Now().UTC()
	m := metricBody{
		Timestamp: now, TimestampUnix: now.Unix(), CPUCount: s.rt.cpuCount(),
		MemTotal: s.rt.cfg.MemoryBytes, DiskTotal: int64(s.rt.cfg.DiskMB) << 20,
	}
	pids := processTree(s.proc.cmd.Process.Pid)
	if s.cg != nil {
		if used, cache, err := s.cg.memory(); err == nil {
			m.MemUsed, m.MemCache = used, cache
		}
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
	m.DiskUsed = dirSize(s.rt.fs.homeDir(s.id))
	return m
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

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
		return nil
	})
	return total
}
