//go:build linux

package envd

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
	"github.com/sessionbox/sessionbox/pkg/envdpb/process/processconnect"
)

const dropNoticeText = "output dropped"

// TestOutputFlowsToReader streams many times the output limit to a client
// that reads it: nothing may be dropped, since only undelivered output is
// bounded. The process waits for the client's go-ahead after each round, so
// the backlog never exceeds one round whatever the machine's speed.
func TestOutputFlowsToReader(t *testing.T) {
	t.Parallel()
	const (
		limit  = 64 << 10
		round  = 48 << 10
		rounds = 12 // 576 KiB in all, 9 times the limit
	)
	e := newEnv(t, func(c *Config) { c.MaxOutputBytes = limit })
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do head -c %d /dev/zero | tr '\\0' x; read go; i=$((i+1)); done; echo done-on-stderr >&2", rounds, round)
	for _, mode := range []string{"pipe", "pty"} {
		t.Run(mode, func(t *testing.T) {
			c := e.proc()
			req := sh(script)
			yes := true
			req.Msg.Stdin = &yes
			input := func(b []byte) *process.ProcessInput {
				return &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: b}}
			}
			if mode == "pty" {
				req = sh("stty -echo; " + script)
				req.Msg.Pty = &process.PTY{Size: &process.PTY_Size{Cols: 80, Rows: 24}}
				input = func(b []byte) *process.ProcessInput {
					return &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: b}}
				}
			}
			pid, s := startBackground(t, c, req)
			sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
			var got, other int
			var end *process.ProcessEvent_EndEvent
			for end == nil && s.Receive() {
				ev := s.Msg().GetEvent()
				d := ev.GetData()
				out := slices.Concat(d.GetStdout(), d.GetPty(), d.GetStderr())
				if bytes.Contains(out, []byte(dropNoticeText)) {
					t.Fatalf("output dropped for a reading client after %d bytes", got)
				}
				before := got / round
				got += bytes.Count(out, []byte("x"))
				other += len(out) - bytes.Count(out, []byte("x"))
				if got/round > before {
					if _, err := c.SendInput(testCtx(t), connect.NewRequest(&process.SendInputRequest{Process: sel, Input: input([]byte("\n"))})); err != nil {
						t.Fatalf("SendInput after %d bytes: %v", got, err)
					}
				}
				end = ev.GetEnd()
			}
			if err := s.Err(); err != nil {
				t.Fatalf("stream after %d bytes: %v", got, err)
			}
			if got != rounds*round || end.GetExitCode() != 0 {
				t.Fatalf("received %d bytes of output (+%d other), want %d; end %v", got, other, rounds*round, end)
			}
		})
	}
}

// TestOutputNobodyReadsIsBounded floods a process's output while no client
// is connected: only the limit is kept for a later Connect, followed by one
// notice, and the process itself is not slowed down or blocked.
func TestOutputNobodyReadsIsBounded(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	e := newEnv(t, func(c *Config) { c.MaxOutputBytes = limit })
	c := e.proc()
	gate := filepath.Join(t.TempDir(), "gate")
	req := sh(fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; head -c 8388608 /dev/zero; echo tail-on-stderr >&2; exit 7", gate))
	ctx, cancel := context.WithCancel(testCtx(t))
	s, err := c.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Receive() || s.Msg().GetEvent().GetStart() == nil {
		t.Fatalf("no start event: %v", s.Err())
	}
	pid := s.Msg().GetEvent().GetStart().GetPid()
	cancel()
	_ = s.Close()
	eventually(t, "the stream to detach", func() bool { return subscribers(t, e, pid) == 0 })
	mustWrite(t, gate, "")
	// Until envd has read the pipes dry, a Connect is a live reader of what
	// is still in them, beyond the limit of what waited for nobody.
	eventually(t, "envd to record the exit", func() bool { return ended(t, e, pid) })
	r := connectBy(t, c, &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}})
	if len(r.stdout) != limit {
		t.Errorf("late Connect got %d bytes of stdout, want exactly the limit %d", len(r.stdout), limit)
	}
	if n := strings.Count(r.stderr, dropNoticeText); n != 1 {
		t.Errorf("stderr %q: %d drop notices, want 1", r.stderr, n)
	}
	if r.end.GetExitCode() != 7 {
		t.Errorf("end %v", r.end)
	}
	if r := mustRun(t, testCtx(t), c, sh("echo ok")); r.stdout != "ok\n" {
		t.Errorf("after flood: %q", r.stdout)
	}
}

// TestOutputSlowReaderIsBounded floods a connected client whose stream
// cannot send (its response writer is held, as a stalled network would; a
// real socket is no good here, as Connect's gzip lets it absorb gigabytes of
// zeros): the stream's queue drops what exceeds the limit, the process is
// not held back, and once the stream moves again it gets the kept output,
// one notice and the end event.
func TestOutputSlowReaderIsBounded(t *testing.T) {
	t.Parallel()
	const (
		limit = 64 << 10
		flood = 64 << 20
	)
	e := newEnv(t, func(c *Config) { c.MaxOutputBytes = limit })
	held := &heldWriter{open: make(chan struct{})}
	hs := httptest.NewServer(held.wrap(e.srv))
	defer hs.Close()
	release := sync.OnceFunc(func() { close(held.open) })
	defer release() // before hs.Close, which waits for the held handler
	c := processconnect.NewProcessClient(http.DefaultClient, hs.URL)
	gate := filepath.Join(t.TempDir(), "gate")
	pid, s := startBackground(t, c, sh(fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; head -c %d /dev/zero; exit 3", gate, flood)))
	held.armed.Store(true)
	mustWrite(t, gate, "")
	eventually(t, "exit", func() bool { return !alive(int(pid)) })
	release()
	got, stderr, end := countRest(t, s)
	// Kept: the full queue, plus at most one earlier queue the blocked
	// stream had taken (itself cut at the limit, with its own notice).
	if got > 2*limit || got < limit {
		t.Errorf("stalled stream got %d bytes of a %d byte flood, want the limit %d, at most twice", got, flood, limit)
	}
	if n := strings.Count(stderr, dropNoticeText); n < 1 || n > 2 {
		t.Errorf("stderr %q: %d drop notices, want 1 or 2", stderr, n)
	}
	if end.GetExitCode() != 3 {
		t.Errorf("end %v", end)
	}
}

// heldWriter injects a stalled client: once armed, response writes block
// until open is closed.
type heldWriter struct {
	armed atomic.Bool
	open  chan struct{}
}

func (h *heldWriter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&heldResponse{ResponseWriter: w, h: h}, r)
	})
}

type heldResponse struct {
	http.ResponseWriter
	h *heldWriter
}

func (w *heldResponse) Write(b []byte) (int, error) {
	if w.h.armed.Load() {
		<-w.h.open
	}
	return w.ResponseWriter.Write(b)
}

func (w *heldResponse) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *heldResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countRest reads a stream to its end, counting stdout rather than keeping it.
func countRest(t *testing.T, s *connect.ServerStreamForClient[process.StartResponse]) (int, string, *process.ProcessEvent_EndEvent) {
	t.Helper()
	got, stderr := 0, ""
	var end *process.ProcessEvent_EndEvent
	for s.Receive() {
		ev := s.Msg().GetEvent()
		got += len(ev.GetData().GetStdout())
		stderr += string(ev.GetData().GetStderr())
		if ev.GetEnd() != nil {
			end = ev.GetEnd()
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream after %d bytes: %v", got, err)
	}
	if end == nil {
		t.Fatalf("stream ended without end event after %d bytes", got)
	}
	return got, stderr, end
}

// ended says whether envd has recorded pid's end: its output read to the
// end of its pipes, its exit status taken.
func ended(t *testing.T, e *env, pid uint32) bool {
	t.Helper()
	p, err := e.srv.procs.find(&process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}})
	if err != nil {
		t.Fatalf("find %d: %v", pid, err)
	}
	return p.hasExited()
}

func subscribers(t *testing.T, e *env, pid uint32) int {
	t.Helper()
	p, err := e.srv.procs.find(&process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}})
	if err != nil {
		t.Fatalf("find %d: %v", pid, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

// TestDetachedStartKeepsAllOutput starts processes with DetachHeader: the
// start stream carries the start event alone, and everything the process
// printed, first bytes included, waits for the first Connect (bounded like
// any output nobody reads); a second Connect gets only the end.
func TestDetachedStartKeepsAllOutput(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	e := newEnv(t, func(c *Config) { c.MaxOutputBytes = limit })
	cases := []struct {
		name, script string
		stdout       func(string) bool
		stderr       string
	}{
		{"lines", "echo first; echo second >&2; echo third",
			func(s string) bool { return s == "first\nthird\n" }, "second\n"},
		{"flood", "head -c 1048576 /dev/zero",
			func(s string) bool { return len(s) == limit }, "\n[envd: output dropped: more than 65536 bytes were waiting to be read]\n"},
	}
	for _, codec := range codecs {
		for _, tc := range cases {
			t.Run(codec.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				c := e.proc(codec.opts...)
				req := sh(tc.script)
				req.Header().Set(DetachHeader, "true")
				s, err := c.Start(testCtx(t), req)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				r, err := collect(t, s, func() *process.ProcessEvent { return s.Msg().GetEvent() })
				if err != nil || strings.Join(r.kinds, ",") != "start" {
					t.Fatalf("detached start stream: %v, err %v; want the start event alone", r.kinds, err)
				}
				eventually(t, "envd to record the exit", func() bool { return ended(t, e, r.pid) })
				got := connectBy(t, c, &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: r.pid}})
				if !tc.stdout(got.stdout) || got.stderr != tc.stderr || got.end.GetExitCode() != 0 {
					t.Errorf("first Connect: stdout %d bytes %.40q, stderr %q, end %v", len(got.stdout), got.stdout, got.stderr, got.end)
				}
				again := connectBy(t, c, &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: r.pid}})
				if strings.Join(again.kinds, ",") != "start,end" {
					t.Errorf("second Connect: %v, want start,end", again.kinds)
				}
			})
		}
	}
}
