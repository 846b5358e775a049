//go:build linux

package envd

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"connectrpc.com/connect"

	"github.com/sessionbox/sessionbox/pkg/envdpb/process"
)

// maxRetainedExited bounds how many exited processes keep their end event
// (and unread output) for a late Connect.
const maxRetainedExited = 32

// processTable indexes the server's processes by pid, running and recently
// exited.
type processTable struct {
	mu     sync.Mutex
	byPid  map[uint32]*proc
	exited []uint32 // exit order, oldest first
	seq    uint64
	closed bool
}

func newProcessTable() *processTable {
	return &processTable{byPid: map[uint32]*proc{}}
}

var errServerClosed = errors.New("envd is shutting down")

func (t *processTable) add(p *proc) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errServerClosed
	}
	// A recycled pid replaces the retained result of its previous owner.
	if old, ok := t.byPid[p.pid]; ok && old.hasExited() {
		t.dropExited(p.pid)
	}
	t.seq++
	p.seq = t.seq
	t.byPid[p.pid] = p
	return nil
}

// exitedNow records p's exit and forgets the oldest results beyond the bound.
func (t *processTable) exitedNow(p *proc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byPid[p.pid] != p {
		return
	}
	t.exited = append(t.exited, p.pid)
	for len(t.exited) > maxRetainedExited {
		pid := t.exited[0]
		t.exited = t.exited[1:]
		delete(t.byPid, pid)
	}
}

func (t *processTable) dropExited(pid uint32) {
	for i, v := range t.exited {
		if v == pid {
			t.exited = append(t.exited[:i], t.exited[i+1:]...)
			break
		}
	}
	delete(t.byPid, pid)
}

// find resolves a selector; running processes win over exited ones for a
// tag, and the newest exited one wins among those.
func (t *processTable) find(sel *process.ProcessSelector) (*proc, error) {
	if sel == nil || sel.Selector == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process selector (pid or tag) is required"))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch s := sel.Selector.(type) {
	case *process.ProcessSelector_Pid:
		if p, ok := t.byPid[s.Pid]; ok {
			return p, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with pid %d not found", s.Pid))
	case *process.ProcessSelector_Tag:
		if p := t.findTagLocked(s.Tag); p != nil {
			return p, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with tag '%s' not found", s.Tag))
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("unknown process selector"))
	}
}

func (t *processTable) findTagLocked(tag string) *proc {
	var best *proc
	for _, p := range t.byPid {
		if p.tag == nil || *p.tag != tag {
			continue
		}
		if !p.hasExited() {
			return p
		}
		if best == nil || p.seq > best.seq {
			best = p
		}
	}
	return best
}

// findRunning is find restricted to processes that have not exited: only
// they can take input or signals.
func (t *processTable) findRunning(sel *process.ProcessSelector) (*proc, error) {
	p, err := t.find(sel)
	if err != nil {
		return nil, err
	}
	if p.hasExited() {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d has already exited", p.pid))
	}
	return p, nil
}

func (t *processTable) running() []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*proc
	for _, p := range t.byPid {
		if !p.hasExited() {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// killAll refuses new processes and SIGKILLs the groups of running ones.
func (t *processTable) killAll() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	for _, p := range t.running() {
		_ = p.signal(sigKill)
	}
}
