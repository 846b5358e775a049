//go:build linux

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
	bytes    int64 // output bytes in events
	dropping bool  // over the limit: output is dropped until the reader takes the backlog
}

// addOutput queues a chunk; what does not fit under limit is dropped, and one
// notice (on stderr, or the PTY) marks the gap until the reader catches up.
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
		b.bytes += int64(len(chunk))
		b.events = append(b.events, dataEvent(kind, chunk))
	}
	if b.dropping {
		b.events = append(b.events, dropNotice(kind, limit))
	}
}

// addEvent queues an event that is not output (the end event); it is never dropped.
func (b *backlog) addEvent(ev *process.ProcessEvent) {
	b.events = append(b.events, ev)
}

// take hands the reader everything queued; output flows again afterwards.
func (b *backlog) take() []*process.ProcessEvent {
	q := b.events
	*b = backlog{}
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
