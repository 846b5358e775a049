package envd

import (
	"fmt"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// backlog is process output queued for one reader (a connected stream, or
// the next Connect) and not yet taken. Only this undelivered output is
// bounded: a reader that keeps up receives everything, however much the
// process prints, while output nobody reads cannot grow memory past limit.
type backlog struct {
	events   []*process.ProcessEvent
	bytes    int64 // output bytes in events, drop notices included
	dropping bool  // over the limit: output is dropped until the reader takes some
}

// addOutput queues a chunk; what does not fit under limit is dropped, and one
// notice (on stderr, or the PTY) marks the gap until the reader takes some.
// chunk must not be modified afterwards.
func (b *backlog) addOutput(kind outKind, chunk []byte, limit int64) {
	if b.dropping {
		return
	}
	if room := limit - b.bytes; int64(len(chunk)) > room {
		chunk = chunk[:max(room, 0)]
		b.dropping = true
	}
	if len(chunk) > 0 {
		b.push(dataEvent(kind, chunk))
	}
	if b.dropping {
		b.push(dropNotice(kind, limit))
	}
}

// addEvent queues an event that is not output (the end event); it is never dropped.
func (b *backlog) addEvent(ev *process.ProcessEvent) {
	b.events = append(b.events, ev)
}

func (b *backlog) push(ev *process.ProcessEvent) {
	b.events = append(b.events, ev)
	b.bytes += eventBytes(ev)
}

// take hands the reader the oldest events, at least one and about batch
// output bytes; the room they free lets output flow again.
func (b *backlog) take(batch int64) []*process.ProcessEvent {
	n, taken := 0, int64(0)
	for n < len(b.events) && (n == 0 || taken < batch) {
		taken += eventBytes(b.events[n])
		n++
	}
	q := b.events[:n:n]
	if n == len(b.events) {
		b.events = nil
	} else {
		b.events = b.events[n:]
	}
	b.bytes -= taken
	if n > 0 {
		b.dropping = false
	}
	return q
}

// prepend puts output a detaching reader never sent back in front of b,
// keeping its size and drop state so the limit still holds.
func (b *backlog) prepend(left backlog) {
	b.events = append(left.events, b.events...)
	b.bytes += left.bytes
	b.dropping = b.dropping || left.dropping
}

func dropNotice(kind outKind, limit int64) *process.ProcessEvent {
	noticeKind := outStderr
	if kind == outPTY {
		noticeKind = outPTY
	}
	msg := fmt.Appendf(nil, "\n[envd: output dropped: more than %d bytes were waiting to be read]\n", limit)
	return dataEvent(noticeKind, msg)
}

func eventBytes(ev *process.ProcessEvent) int64 {
	d := ev.GetData()
	return int64(len(d.GetStdout()) + len(d.GetStderr()) + len(d.GetPty()))
}
