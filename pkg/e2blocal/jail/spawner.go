//go:build linux

package jail

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
)

// Spawner starts sandbox processes from one OS thread that lives exactly as
// long as the runtime. PR_SET_PDEATHSIG fires when the *thread* that forked
// the child exits, not the process, and Go may retire threads; starting
// every bwrap from a dedicated locked thread makes the death signal mean
// "the runtime is gone". When the spawner stops, its goroutine returns while
// still locked, so Go terminates that thread, which also kills any sandbox
// that outlived Close.
type Spawner struct {
	reqs chan spawnReq
	Done chan struct{}
	once sync.Once
}

type spawnReq struct {
	run  func() error
	errc chan error
}

var errSpawnerClosed = errors.New("runtime is shutting down")

func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan spawnReq), Done: make(chan struct{})}
	started := make(chan struct{})
	go s.loop(started)
	<-started
	return s
}

func (s *Spawner) loop(started chan<- struct{}) {
	runtime.LockOSThread()
	// No UnlockOSThread: exiting locked retires the thread on purpose.
	close(started)
	for {
		select {
		case r := <-s.reqs:
			r.errc <- r.run()
		case <-s.Done:
			return
		}
	}
}

// Start starts cmd from the spawner's thread, inside cg when it is set.
func (s *Spawner) Start(cmd *exec.Cmd, cg Cgroup) error {
	run := cmd.Start
	if cg != nil {
		run = func() error { return cg.startIn(cmd) }
	}
	r := spawnReq{run: run, errc: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.errc
	case <-s.Done:
		return errSpawnerClosed
	}
}

func (s *Spawner) Stop() {
	s.once.Do(func() { close(s.Done) })
}
