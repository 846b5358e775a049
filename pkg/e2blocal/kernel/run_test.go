//go:build linux

package kernel

import (
	"context"
	"encoding/binary"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

// startTestProc starts a bare kernel in a temporary directory.
func startTestProc(t *testing.T) (*proc, string) {
	t.Helper()
	e2btest.NeedsSandboxes(t)
	dir := t.TempDir()
	spec := procSpec{python: testPython, dir: dir, env: []string{"PATH=/usr/bin:/bin"}, cap: DefaultMaxOutputBytes, maxFrame: defaultMaxFrame}
	p, err := startProc(context.Background(), spec, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.kill()
		<-p.done
	})
	return p, dir
}

func sendCell(t *testing.T, p *proc, code string) {
	t.Helper()
	if err := p.send(frameExecute, binary.LittleEndian.AppendUint32(nil, 0), []byte(code)); err != nil {
		t.Fatal(err)
	}
}

// nextFrame returns the kernel's next frame; the kernel must not exit.
func nextFrame(t *testing.T, p *proc) frame {
	t.Helper()
	f, ok := <-p.frames
	if !ok {
		t.Fatalf("kernel exited: %s", p.stderr.String())
	}
	return f
}

// A quick cell's frames, count first, are written together: each but the
// last says more follow, so the server flushes the response once.
func TestQuickCellFramesWrittenTogether(t *testing.T) {
	t.Parallel()
	p, _ := startTestProc(t)
	// (Output would wake the flusher, which writes what is queued when its
	// delay ends, however quick the cell.)
	for _, code := range []string{"1+1", "raise ValueError('v')", "x = 3\nx"} {
		sendCell(t, p, code)
		var got []frame
		for {
			f := nextFrame(t, p)
			got = append(got, f)
			if f.typ == frameDone {
				break
			}
		}
		if got[0].typ != frameCount {
			t.Fatalf("%q: first frame %q, want the count", code, got[0].typ)
		}
		for i, f := range got {
			if last := i == len(got)-1; f.more == last {
				t.Errorf("%q: frame %d (%q) more=%v, want %v", code, i, f.typ, f.more, !last)
			}
		}
	}
}

// A running cell holds its count back until the server probes, then writes
// it while the cell still runs: the server learns the cell started.
func TestProbeSendsCountOfRunningCell(t *testing.T) {
	t.Parallel()
	p, dir := startTestProc(t)
	gate := filepath.Join(dir, "gate")
	sendCell(t, p, waitFile(gate)+"'done'")
	// As the server does: a probe read before the cell began asks for nothing.
	var f frame
	for probing := true; probing; {
		p.probe()
		select {
		case f = <-p.frames:
			probing = false
		case <-time.After(probeAfter):
		}
	}
	if f.typ != frameCount || string(f.data) != "1" || f.more {
		t.Fatalf("after the probe: frame %q %q more=%v, want the count alone", f.typ, f.data, f.more)
	}
	// The cell was still waiting for the gate when its count arrived.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var typs []byte
	for f := nextFrame(t, p); ; f = nextFrame(t, p) {
		typs = append(typs, f.typ)
		if f.typ == frameDone {
			break
		}
	}
	if string(typs) != "TAF" {
		t.Errorf("frames after the gate: %q, want TAF", typs)
	}
}

// A silent cell's count line reaches the client while the cell runs.
func TestSilentCellCountLineStreams(t *testing.T) {
	t.Parallel()
	e := defaultEnv(t)
	gate := filepath.Join(e.dir, "gate")
	s := e.open(t, context.Background(), map[string]any{"code": waitFile(gate) + "'done'"})
	defer s.close()
	if l := s.next(t); l["type"] != "number_of_executions" {
		t.Fatalf("first line %v", l)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lines := s.until(t, "end_of_execution")
	if r := (execResult{lines: lines}); r.mainText() != "done" {
		t.Errorf("rest of the stream: %v", lines)
	}
}

// A stream never flushed before its end is left for the server to send
// whole; one already flushed is flushed at its end too.
func TestStreamEndFlushesOnlyAFlushedStream(t *testing.T) {
	t.Parallel()
	for _, early := range []bool{false, true} {
		rec := httptest.NewRecorder()
		es := newExecStream(rec, DefaultMaxOutputBytes, 1<<20, 0)
		es.handle(frame{typ: frameCount, data: []byte("1")})
		if early {
			es.flush()
			rec.Flushed = false
		}
		es.handle(frame{typ: frameText, data: []byte("2")})
		es.finish()
		if rec.Flushed != early {
			t.Errorf("flushed before the end %v: flushed at the end %v", early, rec.Flushed)
		}
		want := `{"type":"number_of_executions","execution_count":1}` + "\n" +
			`{"type":"result","text":"2","is_main_result":true}` + "\n" + endOfExecutionLine
		if got := rec.Body.String(); got != want {
			t.Errorf("flushed before the end %v: body %q, want %q", early, got, want)
		}
	}
}
