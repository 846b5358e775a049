//go:build linux

package e2blocal

import (
	"context"
	"sync"
	"time"
)

// The warm pool keeps a few sandbox trees spawned ahead of demand: uid,
// dirs, cgroup, bwrap and the agent's Go runtime are ready, a standby
// Python kernel is up, and the agent waits for its sandbox's config.
// Spawning costs ~20 ms (bwrap's namespaces, cgroup v1 attaches, the
// agent's start-up) and the kernel ~40 ms more; taking a warm tree leaves
// only the config hand-off and envd's construction on the create path, and
// a code-interpreter sandbox's first execution finds its kernel running
// (the sandbox's env vars are set in it first). A sandbox of another
// template discards the kernel before it serves. When the pool is empty (a
// burst of creates), create spawns a tree itself, which on a busy host is
// most of a burst's time; so the pool grows to the largest burst seen
// lately (up to WarmPoolMax) and shrinks back to WarmPool once the window
// has passed without one: memory is spent on idle trees only while bursts
// come.

func (rt *Runtime) startPool() {
	if rt.cfg.WarmPool <= 0 {
		return
	}
	rt.pool = make(chan *sandbox, rt.cfg.WarmPoolMax)
	rt.poolWG.Add(1)
	go rt.fillPool()
}

// poolPoll is how often a full pool checks whether it should shrink.
const poolPoll = 100 * time.Millisecond

func (rt *Runtime) fillPool() {
	defer rt.poolWG.Done()
	for {
		rt.waitQuiet()
		target := rt.poolTarget(time.Now())
		if n := len(rt.pool); n >= target {
			if n > target {
				rt.shrinkPool()
			}
			select {
			case <-rt.ctx.Done():
				return
			case <-time.After(poolPoll):
			}
			continue
		}
		s, err := rt.prepare(false, true)
		if err != nil {
			select {
			case <-rt.ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		select {
		case rt.pool <- s:
		case <-rt.ctx.Done():
			_ = s.teardown(context.Background())
			return
		}
	}
}

// takeWarm returns a spawned tree whose agent is still alive; one it
// spawns itself starts a standby kernel only when standby asks for it.
func (rt *Runtime) takeWarm(standby bool) (*sandbox, error) {
	for {
		select {
		case s := <-rt.pool:
			if !s.proc.exited() {
				return s, nil
			}
			_ = s.teardown(context.Background())
		default:
			return rt.prepare(false, standby)
		}
	}
}

// drainPool stops the filler and tears down what it had spawned.
func (rt *Runtime) drainPool() {
	rt.poolWG.Wait()
	for {
		select {
		case s := <-rt.pool:
			_ = s.teardown(context.Background())
		default:
			return
		}
	}
}

// poolTarget is how many trees the pool keeps at now.
func (rt *Runtime) poolTarget(now time.Time) int {
	return min(max(rt.demand.peak(now, rt.cfg.WarmPoolWindow), rt.cfg.WarmPool), rt.cfg.WarmPoolMax)
}

// shrinkPool tears down the oldest idle tree.
func (rt *Runtime) shrinkPool() {
	select {
	case s := <-rt.pool:
		_ = s.teardown(context.Background())
	default:
	}
}

// burstSpan is how close together creates count as one burst.
const burstSpan = time.Second

// demandMeter remembers the largest burst of creates of a window.
type demandMeter struct {
	mu     sync.Mutex
	recent []time.Time // creates within burstSpan of the last one
	max    int
	maxAt  time.Time
}

// record notes a create at now.
func (d *demandMeter) record(now time.Time, window time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := d.recent[:0]
	for _, t := range d.recent {
		if now.Sub(t) < burstSpan {
			keep = append(keep, t)
		}
	}
	d.recent = append(keep, now)
	if n := len(d.recent); n >= d.max || now.Sub(d.maxAt) > window {
		d.max, d.maxAt = n, now
	}
}

// peak is the largest burst within window before now; 0 when none.
func (d *demandMeter) peak(now time.Time, window time.Duration) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Sub(d.maxAt) > window {
		return 0
	}
	return d.max
}

// refillQuiet is how long the filler stays away after a create: spawning
// competes for CPU with the create and the first commands that follow it.
const refillQuiet = 30 * time.Millisecond

func (rt *Runtime) waitQuiet() {
	for rt.ctx.Err() == nil {
		last := time.Unix(0, rt.lastCreate.Load())
		if rt.creating.Load() == 0 && time.Since(last) >= refillQuiet {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
