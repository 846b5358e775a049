//go:build linux

package kernel

import (
	"context"
	"encoding/binary"
	"time"
)

// lazyFlush is how long the count line may wait for more lines before it is sent.
const lazyFlush = 2 * time.Millisecond

// cellRun drives one cell on a kernel: it relays frames, sends keepalives,
// interrupts the cell when the client goes away or the timeout elapses, and
// kills the kernel when an interrupt does not stop the cell within the grace period.
type cellRun struct {
	c     *kctx
	p     *proc
	es    *execStream
	grace time.Duration

	started          bool // the kernel reported the cell's count: it handles SIGINT now
	interruptPending bool // an interrupt was asked for before the cell started
	graceTimer       *time.Timer
	graceC           <-chan time.Time
}

func (s *Server) run(ctx context.Context, c *kctx, p *proc, es *execStream, ex *execution) {
	var envLen [4]byte
	binary.LittleEndian.PutUint32(envLen[:], uint32(len(ex.env)))
	if err := p.send(frameExecute, envLen[:], ex.env, []byte(ex.code)); err != nil {
		p.kill() // the frames channel closes and the cell is reported as a dead kernel
	}
	cr := &cellRun{c: c, p: p, es: es, grace: s.tune.grace}
	defer cr.stopGrace()
	ka := time.NewTicker(s.tune.keepalive)
	defer ka.Stop()
	var deadline <-chan time.Time
	if ex.timeout > 0 {
		t := time.NewTimer(ex.timeout)
		defer t.Stop()
		deadline = t.C
	}
	// The count line waits briefly so a quick cell's lines go out in one write.
	lazy := time.NewTimer(time.Hour)
	lazy.Stop()
	defer lazy.Stop()
	clientDone := ctx.Done()
	for {
		select {
		case f, ok := <-p.frames:
			if cr.frame(f, ok, lazy) {
				return
			}
		case <-lazy.C:
			es.flush()
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
func (cr *cellRun) frame(f frame, ok bool, lazy *time.Timer) bool {
	if !ok {
		cr.c.forget(cr.p)
		cr.es.died(cr.p)
		cr.es.end()
		return true
	}
	if f.typ == frameDone {
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
	// The files line waits for end_of_execution, which follows at once: no
	// flush of its own.
	if len(cr.p.frames) == 0 && f.typ != frameFiles {
		if f.typ == frameCount {
			lazy.Reset(lazyFlush)
		} else {
			cr.es.flush()
		}
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
