//go:build linux

package jail

import "sync"

// TailBuffer keeps the first and the last bytes written: the agent's
// diagnostics (a Go crash names its cause at the top and the failing
// goroutines below), bounded because sandboxed code can write to the
// agent's stderr.
type TailBuffer struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte
	dropped bool
}

func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{headMax: max / 4, tailMax: max - max/4} }

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.headMax - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > t.tailMax {
		t.dropped = true
		p = p[len(p)-t.tailMax:]
	}
	if over := len(t.tail) + len(p) - t.tailMax; over > 0 {
		t.dropped = true
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
	t.tail = append(t.tail, p...)
	return n, nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.dropped {
		sep = "\n[...]\n"
	}
	return string(t.head) + sep + string(t.tail)
}
