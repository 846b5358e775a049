//go:build linux

package kernel

import (
	"strconv"
	"syscall"
	"testing"
)

// TestStandbyAdopted: a server adopts a standby kernel started from its
// config when the sandbox's extra variables can be set late, and starts
// its own otherwise; a standby it does not adopt is gone.
func TestStandbyAdopted(t *testing.T) {
	t.Parallel()
	base := []string{"PATH=/usr/bin:/bin", "GREETING=base"}
	tests := []struct {
		name    string
		extra   map[string]string
		workdir string // the server's, when not the standby's
		adopted bool
		want    string // the first cell's result
	}{
		{"no extra", nil, "", true, "('base', None)"},
		{"extra set", map[string]string{"STAGE": "warm", "GREETING": "hi"}, "", true, "('hi', 'warm')"},
		{"read at start", map[string]string{"STAGE": "warm", "PYTHONHASHSEED": "0"}, "", false, "('base', 'warm')"},
		{"another workdir", nil, "other", false, "('base', None)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			st := StartStandby(Config{Python: testPython, Workdir: dir, Env: base})
			<-st.done
			if st.err != nil {
				t.Fatalf("standby: %v", st.err)
			}
			standbyPid := st.p.pid
			env := append([]string{}, base...)
			for k, v := range tc.extra {
				env = append(env, k+"="+v)
			}
			workdir := dir
			if tc.workdir != "" {
				workdir = t.TempDir()
			}
			e := newTestEnv(t, Config{Env: env, Workdir: workdir}, testTuning)
			e.srv.PrewarmFrom(st, tc.extra)
			pid := e.kernelPid(t)
			r := e.run(t, "import os, subprocess\n(subprocess.check_output(['sh', '-c', 'echo -n $GREETING']).decode(), os.environ.get('STAGE'))").mustNoError(t)
			if r.mainText() != tc.want || r.count() != 1 {
				t.Fatalf("first cell %s (count %d), want %s as cell 1", r.mainText(), r.count(), tc.want)
			}
			if got := pid == standbyPid; got != tc.adopted {
				t.Fatalf("kernel %d, standby %d: adopted %v, want %v", pid, standbyPid, got, tc.adopted)
			}
			if !tc.adopted && syscall.Kill(standbyPid, 0) == nil {
				t.Fatalf("standby kernel %d still runs beside kernel %d", standbyPid, pid)
			}
			if got := e.run(t, "os.getpid()").mustNoError(t).mainText(); got != strconv.Itoa(pid) {
				t.Fatalf("second cell ran in %s, want %d", got, pid)
			}
		})
	}
}

// TestStandbyDiscard: a discarded standby is gone, also when discarded
// while it is still starting.
func TestStandbyDiscard(t *testing.T) {
	t.Parallel()
	for _, wait := range []bool{false, true} {
		st := StartStandby(Config{Python: testPython, Workdir: t.TempDir()})
		if wait {
			<-st.done
		}
		st.Discard()
		if st.err == nil {
			if err := syscall.Kill(st.p.pid, 0); err == nil {
				t.Fatalf("wait %v: standby kernel %d still runs", wait, st.p.pid)
			}
		}
	}
}
