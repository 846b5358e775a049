//go:build linux

package agent

import (
	"runtime"
	"sync"
)

// ReservedThreads is how many OS threads the agent starts up front.
const ReservedThreads = 24

// ReserveThreads makes the Go runtime start n OS threads now and keep them
// idle for later use. Go creates threads on demand (one per goroutine in a
// blocking syscall, e.g. waiting for a child process) and aborts the whole
// process when it cannot ("pthread_create failed: Resource temporarily
// unavailable"). Inside a sandbox that happens as soon as a fork bomb has
// used up the task limit (pids cgroup, RLIMIT_NPROC) or a memory bomb the
// data limit; threads made before any sandboxed code runs keep the agent
// serving through both (seen: without them the agent died in the fork bomb
// test). Idle threads are never released by the Go runtime.
func ReserveThreads(n int) {
	var locked, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		locked.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			// A locked goroutine blocked on a channel pins its thread, so
			// the scheduler must start another one for everything else.
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
	done.Wait()
}
