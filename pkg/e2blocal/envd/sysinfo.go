//go:build linux

package envd

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func (s *Server) handleEnvs(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Env)
}

// metrics is the GET /metrics body (snake_case as envd sends it).
type metrics struct {
	Ts          int64   `json:"ts"`
	CPUCount    int     `json:"cpu_count"`
	CPUUsedPct  float64 `json:"cpu_used_pct"`
	MemTotal    uint64  `json:"mem_total"`
	MemUsed     uint64  `json:"mem_used"`
	MemCache    uint64  `json:"mem_cache"`
	MemTotalMiB uint64  `json:"mem_total_mib"`
	MemUsedMiB  uint64  `json:"mem_used_mib"`
	DiskUsed    uint64  `json:"disk_used"`
	DiskTotal   uint64  `json:"disk_total"`
}

func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	m, err := s.collectMetrics()
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) collectMetrics() (metrics, error) {
	mem, err := readMeminfo("/proc/meminfo")
	if err != nil {
		return metrics{}, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.cfg.Home, &st); err != nil {
		return metrics{}, fmt.Errorf("statfs %s: %w", s.cfg.Home, err)
	}
	bsize := uint64(st.Bsize)
	used := mem["MemTotal"] - mem["MemAvailable"]
	if mem["MemAvailable"] > mem["MemTotal"] {
		used = 0
	}
	return metrics{
		Ts:          time.Now().Unix(),
		CPUCount:    runtime.NumCPU(),
		CPUUsedPct:  s.cpu.usedPct(),
		MemTotal:    mem["MemTotal"],
		MemUsed:     used,
		MemCache:    mem["Cached"],
		MemTotalMiB: mem["MemTotal"] >> 20,
		MemUsedMiB:  used >> 20,
		DiskUsed:    (st.Blocks - st.Bfree) * bsize,
		DiskTotal:   st.Blocks * bsize,
	}, nil
}

// readMeminfo returns /proc/meminfo values in bytes.
func readMeminfo(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[key] = v
	}
	return out, nil
}

// cpuSampler turns cumulative /proc/stat counters into a usage percentage
// over the interval since the previous call.
type cpuSampler struct {
	mu          sync.Mutex
	busy, total uint64
}

func newCPUSampler() *cpuSampler {
	c := &cpuSampler{}
	c.busy, c.total, _ = readCPUTimes("/proc/stat")
	return c
}

func (c *cpuSampler) usedPct() float64 {
	busy, total, err := readCPUTimes("/proc/stat")
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if busy < c.busy || total <= c.total {
		c.busy, c.total = busy, total
		return 0
	}
	db, dt := busy-c.busy, total-c.total
	c.busy, c.total = busy, total
	pct := float64(db) / float64(dt) * 100
	return math.Round(pct*100) / 100
}

func readCPUTimes(path string) (busy, total uint64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected %s format", path)
	}
	// user nice system idle iowait irq softirq steal; guest time is already
	// part of user and nice.
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse %s: %w", path, err)
		}
		total += v
		if i != 3 && i != 4 { // idle and iowait
			busy += v
		}
	}
	return busy, total, nil
}
