package envd

import (
	"bytes"
	"slices"
	"testing"
	"time"

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

// newTestProc returns a proc without a process behind it; output stalls for
// at most stall before it is dropped for a stream that does not read.
func newTestProc(limit int64, stall time.Duration) *proc {
	return &proc{maxOut: limit, stallWait: stall, subs: map[*subscriber]struct{}{}, done: make(chan struct{})}
}

func noticeLen(limit int64) int64 {
	return eventBytes(dropNotice(outStdout, limit))
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
	const limit = 1000
	p := newTestProc(limit, time.Millisecond)
	sub := p.subscribe()

	for range 100 { // 100 times the limit, taken as it comes
		publishN(p, outStdout, 1, 300)
		if d := drain(sub.take()); d.stdout != 300 || d.notices != 0 {
			t.Fatalf("reading subscriber got %+v, want all 300 bytes", d)
		}
	}

	publishN(p, outStdout, 50, 300) // nobody takes: 15 000 bytes
	if q := queued(sub); q != limit+noticeLen(limit) {
		t.Fatalf("queued %d bytes, want the limit %d and a notice", q, limit)
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
	if pending != limit+noticeLen(limit) {
		t.Fatalf("pending %d bytes, want the limit %d and a notice", pending, limit)
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
	const limit = 1000
	p := newTestProc(limit, time.Millisecond)
	fast, stalled := p.subscribe(), p.subscribe()
	for range 20 {
		publishN(p, outStdout, 1, 400)
		if d := drain(fast.take()); d.stdout != 400 || d.notices != 0 {
			t.Fatalf("reading subscriber got %+v", d)
		}
	}
	if q := queued(stalled); q != limit+noticeLen(limit) {
		t.Fatalf("stalled subscriber holds %d bytes, want the limit %d and a notice", q, limit)
	}
}

// TestBacklogPrependKeepsLimit checks that output a detaching stream had
// not sent counts against the pending buffer's limit.
func TestBacklogPrependKeepsLimit(t *testing.T) {
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
			p := newTestProc(1000, time.Millisecond)
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

// TestBacklogFlowControl checks that a stream which reads, however slowly,
// throttles the process instead of losing output: a publisher waits for the
// room each take frees.
func TestBacklogFlowControl(t *testing.T) {
	const limit, chunk, chunks = 1000, 300, 40
	p := newTestProc(limit, time.Hour)
	sub := p.subscribe()
	published := make(chan struct{})
	go func() {
		defer close(published)
		publishN(p, outStdout, chunks, chunk)
	}()
	var got drained
	for got.stdout < chunks*chunk && got.notices == 0 {
		<-sub.notify
		d := drain(sub.take())
		got.stdout += d.stdout
		got.notices += d.notices
		if q := queued(sub); q > limit {
			t.Fatalf("queue holds %d bytes, over the limit %d", q, limit)
		}
	}
	<-published
	if got.stdout != chunks*chunk || got.notices != 0 {
		t.Fatalf("got %+v, want all %d bytes and no notice", got, chunks*chunk)
	}
}

// TestBacklogDetachReleasesPublisher checks that a publisher waiting for
// room in a stream's full queue is released as soon as the stream detaches,
// and that the output then goes to the buffer kept for a later Connect.
func TestBacklogDetachReleasesPublisher(t *testing.T) {
	const limit = 1000
	p := newTestProc(limit, time.Hour)
	sub := p.subscribe()
	publishN(p, outStdout, 1, limit)
	published := make(chan struct{})
	go func() {
		defer close(published)
		publishN(p, outStdout, 1, 10)
	}()
	p.unsubscribe(sub)
	<-published
	if d := drain(p.subscribe().take()); d.stdout != limit || d.notices != 1 {
		t.Fatalf("later Connect got %+v, want %d bytes and one notice", d, limit)
	}
}
