//go:build linux

package e2blocal

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
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
// burst of creates), a create waits for the first tree to finish spawning,
// its own or a refill (treeSupply); spawns for waiting creates start a few
// at a time, oldest first. Spawning a tree is ~60 ms of CPU, so a burst
// that outruns the pool is bounded by the host's cores; the pool grows to
// the largest burst seen lately (up to WarmPoolMax) and shrinks back to
// WarmPool once the window has passed without one: memory is spent on idle
// trees only while bursts come. The memory of bursts survives a restart
// on the same DataDir (demandfile.go).

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
		if rt.ctx.Err() != nil {
			return
		}
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
		rt.offer(s)
	}
}

// takeWarm returns a spawned tree whose agent is still alive: one from the
// pool, else the first tree the runtime finishes spawning, its own or a
// refill, whichever is first. Trees spawned for waiting creates start a
// standby kernel when the oldest waiting create without one asks for it.
// The caller must call doneStarting once the tree serves or is torn down.
func (rt *Runtime) takeWarm(standby bool) (*sandbox, error) {
	sup := &rt.supply
	sup.mu.Lock()
	for {
		select {
		case s := <-rt.pool:
			if s.proc.Exited() {
				sup.mu.Unlock()
				_ = s.teardown(context.Background())
				sup.mu.Lock()
				continue
			}
			sup.mu.Unlock()
			return s, nil
		default:
		}
		break
	}
	w := &treeWaiter{standby: standby, got: make(chan treeResult, 1)}
	sup.waiters = append(sup.waiters, w)
	rt.kickLocked()
	sup.mu.Unlock()
	// A create waits for a tree StartTimeout at most: on a host too loaded
	// to spawn trees in time, a burst's queue would hold creates for
	// minutes. Past it the create is refused as overloaded (503 with
	// Retry-After, as a spawn that timed out), soon enough for the service
	// to answer its caller with that status rather than inside a 200.
	wait := time.NewTimer(rt.cfg.StartTimeout)
	defer wait.Stop()
	closed := false
	select {
	case r := <-w.got:
		return r.s, r.err
	case <-rt.ctx.Done():
		closed = true
	case <-wait.C:
	}
	sup.mu.Lock()
	if i := slices.Index(sup.waiters, w); i >= 0 {
		sup.waiters = slices.Delete(sup.waiters, i, i+1)
	}
	sup.mu.Unlock()
	select {
	case r := <-w.got:
		if !closed {
			return r.s, r.err // handed over just in time
		}
		if r.s != nil {
			rt.doneStarting(r.s)
			_ = r.s.teardown(context.Background())
		}
	default:
	}
	if closed {
		return nil, errClosed
	}
	return nil, fmt.Errorf("no sandbox tree came up within %s: the host spawns too slowly for the creates waiting: %w",
		rt.cfg.StartTimeout, os.ErrDeadlineExceeded)
}

// treeSupply hands spawned trees to creates that found the pool empty,
// oldest first, and bounds how many trees start at once. Spawning is CPU
// work (bwrap, the agent's start, Python's): ten trees started together
// on two cores all finish late, while started a few at a time the first
// serve early and the last no later.
type treeSupply struct {
	mu      sync.Mutex
	waiters []*treeWaiter
	// inflight counts spawns started for waiters whose trees are not
	// handed over yet; starting counts those and the handed-over trees
	// whose agents do not serve yet, against limit.
	inflight, starting, limit int
}

type treeWaiter struct {
	standby bool
	got     chan treeResult // buffered: handing over never blocks
}

type treeResult struct {
	s   *sandbox
	err error
}

// spawnLimit is how many trees start at once for waiting creates.
func spawnLimit() int { return max(2, runtime.NumCPU()) }

// kickLocked starts spawns for waiters no spawn covers yet, up to the
// limit; sup.mu must be held.
func (rt *Runtime) kickLocked() {
	sup := &rt.supply
	for sup.starting < sup.limit && sup.inflight < len(sup.waiters) {
		standby := sup.waiters[sup.inflight].standby
		sup.starting++
		sup.inflight++
		rt.busy.Add(1)
		go rt.spawnForWaiter(standby)
	}
}

func (rt *Runtime) spawnForWaiter(standby bool) {
	defer rt.busy.Add(-1)
	s, err := rt.prepare(false, standby)
	sup := &rt.supply
	sup.mu.Lock()
	sup.inflight--
	if err != nil {
		sup.starting--
		if len(sup.waiters) > 0 {
			w := sup.waiters[0]
			sup.waiters = sup.waiters[1:]
			w.got <- treeResult{err: err}
		}
		rt.kickLocked()
		sup.mu.Unlock()
		return
	}
	s.starting = true
	rt.offerLocked(s)
	sup.mu.Unlock()
}

// offer hands a spawned tree to the oldest waiting create, else keeps it
// in the pool.
func (rt *Runtime) offer(s *sandbox) {
	rt.supply.mu.Lock()
	defer rt.supply.mu.Unlock()
	rt.offerLocked(s)
}

func (rt *Runtime) offerLocked(s *sandbox) {
	sup := &rt.supply
	if len(sup.waiters) > 0 {
		w := sup.waiters[0]
		sup.waiters = sup.waiters[1:]
		w.got <- treeResult{s: s}
		return
	}
	rt.doneStartingLocked(s)
	// A tree without a standby kernel was spawned for a create of another
	// template that a refill served first; the pool keeps kernels running.
	if s.standby && rt.ctx.Err() == nil {
		select {
		case rt.pool <- s:
			return
		default:
		}
	}
	rt.busy.Add(1)
	go func() {
		defer rt.busy.Add(-1)
		_ = s.teardown(context.Background())
	}()
}

// doneStarting frees the start slot of a tree spawned for a waiting
// create, once its agent serves or it is torn down.
func (rt *Runtime) doneStarting(s *sandbox) {
	rt.supply.mu.Lock()
	defer rt.supply.mu.Unlock()
	rt.doneStartingLocked(s)
	rt.kickLocked()
}

func (rt *Runtime) doneStartingLocked(s *sandbox) {
	if s.starting {
		s.starting = false
		rt.supply.starting--
	}
}

// drainPool stops the filler and tears down what it had spawned.
func (rt *Runtime) drainPool() {
	rt.poolWG.Wait()
	// Under the supply's lock, so that a spawn finishing now either sees
	// the runtime closing or lands in the pool before it is drained.
	rt.supply.mu.Lock()
	var trees []*sandbox
	for done := false; !done; {
		select {
		case s := <-rt.pool:
			trees = append(trees, s)
		default:
			done = true
		}
	}
	rt.supply.mu.Unlock()
	for _, s := range trees {
		_ = s.teardown(context.Background())
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
