//go:build linux

package kernel

import (
	"context"
	"encoding/binary"
	"time"
)

// probeAfter is how long a cell may run before the server asks the kernel
// for its count line: a quicker cell sends it with its results in one write.
const probeAfter = 2 * time.Millisecond

// cellRun drives one cell on a kernel: it relays frames, sends keepalives,
// interrupts the cell when the client goes away or the timeout elapses, and
// kills the kernel when an interrupt does not stop the cell within the grace period.
type cellRun struct {
	c     *kctx
	p     *proc
	es    *execStream
	grace time.Duration

	// watch, when set, reports the files the cell changes: the kernel does
	// not scan for them.
	watch *treeWatch

	started          bool // the kernel reported the cell's count: it handles SIGINT now
	interruptPending bool // an interrupt was asked for before the cell started
	graceTimer       *time.Timer
	graceC           <-chan time.Time
}

func (s *Server) run(ctx context.Context, c *kctx, p *proc, es *execStream, ex *execution) {
	var envLen [4]byte
	binary.LittleEndian.PutUint32(envLen[:], uint32(len(ex.env)))
	cr := &cellRun{c: c, p: p, es: es, grace: s.tune.grace}
	cmd := byte(frameExecute)
	if w := p.treeWatch(); w != nil && w.begin() {
		cmd, cr.watch = frameExecuteWatched, w
	}
	if err := p.send(cmd, envLen[:], ex.env, []byte(ex.code)); err != nil {
		p.kill() // the frames channel closes and the cell is reported as a dead kernel
	}
	es.noChanges = &p.noChanges
	defer cr.stopGrace()
	ka := time.NewTicker(s.tune.keepalive)
	defer ka.Stop()
	probe := time.NewTimer(probeAfter)
	defer probe.Stop()
	var deadline <-chan time.Time
	if ex.timeout > 0 {
		t := time.NewTimer(ex.timeout)
		defer t.Stop()
		deadline = t.C
	}
	clientDone := ctx.Done()
	for {
		select {
		case f, ok := <-p.frames:
			if cr.frame(f, ok) {
				return
			}
		case <-probe.C:
			// Again until the count comes: a probe the kernel reads before
			// the cell asks for nothing.
			if !cr.started {
				p.probe()
				probe.Reset(probeAfter)
			}
		case <-ka.C:
			es.keepalive()
			es.flush()
		case <-clientDone:
			es.gone = true
		case <-deadline:
			deadline = nil
			es.timedOut = true
			cr.interrupt()
		case <-cr.graceC:
			cr.graceC = nil
			p.kill()
		}
		if es.gone && clientDone != nil {
			clientDone = nil
			cr.interrupt()
		}
	}
}

// frame handles one kernel frame (ok false: the kernel is gone) and reports
// whether the cell is over.
func (cr *cellRun) frame(f frame, ok bool) bool {
	if !ok {
		cr.c.forget(cr.p)
		cr.es.died(cr.p)
		cr.es.end()
		return true
	}
	if f.typ == frameDone {
		if cr.watch != nil {
			// Whatever user code wrote as an A frame is not the report.
			cr.es.changed = cr.watch.appendLine(cr.es.changed[:0])
		}
		cr.es.finish()
		return true
	}
	if f.typ == frameCount && !cr.started {
		cr.started = true
		if cr.interruptPending {
			cr.p.interrupt()
		}
	}
	cr.es.handle(f)
	// Frames the kernel wrote together go out in one write: the kernel
	// holds a quick cell's count until its results, and batches output.
	// The files line waits for end_of_execution, which follows at once.
	if !f.more && f.typ != frameFiles {
		cr.es.flush()
	}
	return false
}

// interrupt sends SIGINT once the cell has started (the kernel ignores it
// between cells) and starts the grace period.
func (cr *cellRun) interrupt() {
	if cr.started {
		cr.p.interrupt()
	} else {
		cr.interruptPending = true
		cr.p.probe() // the count line says when the kernel will take SIGINT
	}
	if cr.graceTimer == nil {
		cr.graceTimer = time.NewTimer(cr.grace)
		cr.graceC = cr.graceTimer.C
	}
}

func (cr *cellRun) stopGrace() {
	if cr.graceTimer != nil {
		cr.graceTimer.Stop()
	}
}
