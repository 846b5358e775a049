//go:build linux

package envd

import (
	"bytes"
	"slices"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

type drained struct {
	stdout, stderr, pty int // output bytes, notices excluded
	notices             int
	ends                int
}

func drain(evs []*process.ProcessEvent) drained {
	var d drained
	for _, ev := range evs {
		if ev.GetEnd() != nil {
			d.ends++
			continue
		}
		data := ev.GetData()
		out := slices.Concat(data.GetStdout(), data.GetStderr(), data.GetPty())
		if bytes.Contains(out, []byte(dropNoticeText)) {
			d.notices++
			continue
		}
		d.stdout += len(data.GetStdout())
		d.stderr += len(data.GetStderr())
		d.pty += len(data.GetPty())
	}
	return d
}

func newTestProc(limit int64) *proc {
	return &proc{maxOut: limit, subs: map[*subscriber]struct{}{}, done: make(chan struct{})}
}

func publishN(p *proc, kind outKind, n, size int) {
	chunk := bytes.Repeat([]byte("a"), size)
	for range n {
		p.publish(kind, chunk)
	}
}

func queued(sub *subscriber) int64 {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.out.bytes
}

// TestBacklogBoundsOnlyUndelivered drives a process's queues directly:
// a subscriber that takes its queue gets every byte however much is
// printed; one that does not is held to the limit with one notice; output
// flows again once it catches up, and the same holds for the buffer kept
// for a later Connect.
func TestBacklogBoundsOnlyUndelivered(t *testing.T) {
	t.Parallel()
	const limit = 1000
	p := newTestProc(limit)
	sub := p.subscribe()

	for range 100 { // 100 times the limit, taken as it comes
		publishN(p, outStdout, 1, 300)
		if d := drain(sub.take()); d.stdout != 300 || d.notices != 0 {
			t.Fatalf("reading subscriber got %+v, want all 300 bytes", d)
		}
	}

	publishN(p, outStdout, 50, 300) // nobody takes: 15 000 bytes
	if q := queued(sub); q != limit {
		t.Fatalf("queued %d bytes, want the limit %d", q, limit)
	}
	if d := drain(sub.take()); d.stdout != limit || d.notices != 1 {
		t.Fatalf("slow subscriber got %+v, want %d bytes and one notice", d, limit)
	}
	publishN(p, outStderr, 1, 300)
	if d := drain(sub.take()); d.stderr != 300 || d.notices != 0 {
		t.Fatalf("after catching up got %+v, want the next 300 bytes", d)
	}

	publishN(p, outPTY, 2, 300) // queued, then handed back on detach
	p.unsubscribe(sub)
	publishN(p, outPTY, 50, 300) // nobody connected
	p.mu.Lock()
	pending := p.pending.bytes
	p.mu.Unlock()
	if pending != limit {
		t.Fatalf("pending %d bytes, want the limit %d", pending, limit)
	}
	p.finish(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: &process.ProcessEvent_EndEvent{Exited: true}}})
	late := p.subscribe()
	if d := drain(late.take()); d.pty != limit || d.notices != 1 || d.ends != 1 {
		t.Fatalf("late Connect got %+v, want %d bytes, one notice and the end", d, limit)
	}
}

// TestBacklogSubscribersAreIndependent checks a stalled stream neither
// stalls nor truncates another stream of the same process.
func TestBacklogSubscribersAreIndependent(t *testing.T) {
	t.Parallel()
	const limit = 1000
	p := newTestProc(limit)
	fast, stalled := p.subscribe(), p.subscribe()
	for range 20 {
		publishN(p, outStdout, 1, 400)
		if d := drain(fast.take()); d.stdout != 400 || d.notices != 0 {
			t.Fatalf("reading subscriber got %+v", d)
		}
	}
	if q := queued(stalled); q != limit {
		t.Fatalf("stalled subscriber holds %d bytes, want %d", q, limit)
	}
}

// TestBacklogPrependKeepsLimit checks that output a detaching stream had
// not sent counts against the pending buffer's limit.
func TestBacklogPrependKeepsLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		left, after int // bytes queued in the stream, then published while detached
		wantBytes   int
		wantNotices int
	}{
		{"room left", 300, 300, 600, 0},
		{"fills up", 800, 300, 1000, 1},
		{"already full", 1000, 300, 1000, 1},
		{"stream had dropped", 1500, 300, 1000, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newTestProc(1000)
			sub := p.subscribe()
			p.publish(outStdout, bytes.Repeat([]byte("a"), c.left))
			p.unsubscribe(sub)
			p.publish(outStdout, bytes.Repeat([]byte("b"), c.after))
			d := drain(p.subscribe().take())
			if d.stdout != c.wantBytes || d.notices != c.wantNotices {
				t.Fatalf("got %+v, want %d bytes and %d notices", d, c.wantBytes, c.wantNotices)
			}
		})
	}
}
