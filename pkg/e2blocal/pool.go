//go:build linux

package e2blocal

import (
	"context"
	"time"
)

// The warm pool keeps a few sandbox trees spawned ahead of demand: uid,
// dirs, cgroup, bwrap and the agent's Go runtime are ready, and the agent
// waits for its config. Spawning costs ~20 ms (bwrap's namespaces, cgroup v1
// attaches, the agent's start-up); taking a warm tree leaves only the config
// hand-off and envd's construction on the create path. When the pool is
// empty (a burst of creates), create spawns a tree itself.

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
		s, err := rt.prepare(false)
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

// takeWarm returns a spawned tree whose agent is still alive.
func (rt *Runtime) takeWarm() (*sandbox, error) {
	for {
		select {
		case s := <-rt.pool:
			if !s.proc.exited() {
				return s, nil
			}
			_ = s.teardown(context.Background())
		default:
			return rt.prepare(false)
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
