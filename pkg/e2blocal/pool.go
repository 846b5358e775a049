//go:build linux

package e2blocal

import (
	"context"
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
// burst of creates), create spawns a tree itself.

func (rt *Runtime) startPool() {
	if rt.cfg.WarmPool <= 0 {
		return
	}
	rt.pool = make(chan *sandbox, rt.cfg.WarmPool)
	rt.poolWG.Add(1)
	go rt.fillPool()
}

func (rt *Runtime) fillPool() {
	defer rt.poolWG.Done()
	for {
		rt.waitQuiet()
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
