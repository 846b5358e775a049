//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

type sbState int

const (
	stateRunning sbState = iota
	statePaused
	stateKilled
)

func (s sbState) String() string {
	switch s {
	case stateRunning:
		return "running"
	case statePaused:
		return "paused"
	default:
		return "killed"
	}
}

var (
	errConflict = errors.New("state conflict")
	errGone     = errors.New("sandbox is gone")
)

// sandbox is one live sandbox. Fields above mu never change after create.
type sandbox struct {
	rt *Runtime
	id string
	// hostKey names the sandbox's resources on the host (home dir and
	// image, agent socket, cgroup): paths another local user sees in
	// /proc/net/unix, /proc/*/mountinfo and /sys/fs/cgroup. It is random
	// and unrelated to id, so those places do not reveal sandbox ids.
	hostKey string
	// adopt is the orphan home, image or dir (Config.RecoverHomes), the sandbox
	// is to get; adopted says it did.
	adopt       string
	adopted     bool
	templateID  string
	alias       string
	metadata    map[string]string
	share       string // shareKey of metadata: whose CPU share it draws on
	envVars     map[string]string
	accessToken string
	// trafficToken, when set, is required of every request to a port
	// other than envd's (E2B's network.allowPublicTraffic: false).
	trafficToken string
	startedAt    time.Time
	timeout      time.Duration // the lifetime asked for at creation
	autoPause    bool
	autoResume   bool
	allowNet     *bool
	uid          *jail.UIDLease
	hostUID      int // bwrap's host uid: root inside when userUID is set, else user
	userUID      int // user's host uid in a sandbox with root, else -1
	cg           jail.Cgroup
	proc         *jail.AgentProc
	net          *slirpProc // nil without internet access
	transport    *http.Transport
	homeMounted  bool     // /home/user is a loop-mounted image (jail/homeimg.go)
	standby      bool     // its agent was spawned starting a standby kernel
	tmpl         template // its template, set by create (the pool's trees: the host's system dirs)
	starting     bool     // holds a start slot (pool.go); guarded by rt.supply.mu

	mu     sync.Mutex
	state  sbState
	endAt  time.Time
	timer  *time.Timer
	timerN uint64 // generation: a stale timer's callback does nothing
	cpu    cpuSample

	metrics *metricRing
	// The last walked disk figure (homes that are not images), reused for
	// diskSampleAge; guarded by metrics.mu or only used by metric's callers.
	diskAt         time.Time
	diskUsedCached int64

	// tasksRefused is the pids cgroup's refused-fork count last seen, and
	// defuse serialises the kill of a fork bomb (forkbomb.go).
	tasksRefused atomic.Int64
	defuse       sync.Mutex
	treePids     []int // treeOf at create: never killed as a bomb's
}

func (s *sandbox) snapshot() (sbState, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.endAt
}

// armLocked (re)starts the lifetime timer; s.mu must be held.
func (s *sandbox) armLocked(d time.Duration) {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerN++
	n := s.timerN
	s.endAt = time.Now().Add(d)
	s.timer = time.AfterFunc(d, func() { s.expire(n) })
}

func (s *sandbox) disarmLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.timerN++
}

// setTimeout moves the deadline to now+d, like E2B's setTimeout.
func (s *sandbox) setTimeout(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateKilled:
		return errGone
	case statePaused:
		s.endAt = time.Now().Add(d)
		return nil
	}
	s.armLocked(d)
	return nil
}

// refresh extends the deadline to now+d unless it is already later.
func (s *sandbox) refresh(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateKilled {
		return errGone
	}
	if s.state == stateRunning && time.Now().Add(d).After(s.endAt) {
		s.armLocked(d)
	}
	return nil
}

func (s *sandbox) expire(gen uint64) {
	s.mu.Lock()
	if gen != s.timerN || s.state != stateRunning {
		s.mu.Unlock()
		return
	}
	pause := s.autoPause
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.rt.ctx, 10*time.Second)
	defer cancel()
	if pause {
		if err := s.pause(ctx); err == nil || errors.Is(err, errConflict) {
			return
		}
	}
	_ = s.kill(ctx)
}

// pause freezes the whole tree; memory stays as it is. A sandbox's
// slirp4netns is left running: it is outside the tree, a frozen tree sends
// nothing, and what remote peers send meanwhile waits in the sandbox's own
// socket buffers (its kernel network stack is not frozen), so connections
// that the peers keep open still work after resume.
func (s *sandbox) pause(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateRunning {
		return fmt.Errorf("%w: sandbox %q cannot be paused while in %q state", errConflict, s.id, s.state)
	}
	s.state = statePaused // new proxied requests now get 502 (or resume)
	if err := s.freeze(ctx); err != nil {
		s.state = stateRunning
		return err
	}
	s.disarmLocked()
	s.transport.CloseIdleConnections()
	return nil
}

func (s *sandbox) freeze(ctx context.Context) error {
	if s.cg != nil {
		if err := s.cg.Freeze(ctx); err != nil {
			_ = s.cg.Thaw()
			return fmt.Errorf("freeze sandbox %s: %w", s.id, err)
		}
		return nil
	}
	// Without a freezer the tree is stopped task by task; a process forked
	// while we walk is caught by the next pass. SIGSTOP takes effect when the
	// task next runs, so pause waits until every task reports stopped.
	return jail.WaitFor(ctx, "sandbox tasks to stop", func() bool {
		stopped := true
		for _, pid := range jail.ProcessTree(s.proc.Cmd.Process.Pid) {
			if st := procState(pid); st != 'T' && st != 't' && st != 'Z' && st != 0 {
				stopped = false
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		return stopped
	})
}

// procState is the state letter of /proc/<pid>/stat, 0 when it is gone.
func procState(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || len(data) < i+3 {
		return 0
	}
	return data[i+2]
}

func (s *sandbox) thaw() error {
	if s.cg != nil {
		if err := s.cg.Thaw(); err != nil {
			return fmt.Errorf("thaw sandbox %s: %w", s.id, err)
		}
		return nil
	}
	for _, pid := range jail.ProcessTree(s.proc.Cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	return nil
}

// resume thaws a paused sandbox and re-arms its timeout. It reports whether
// the sandbox was actually paused.
func (s *sandbox) resume(timeout time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateKilled:
		return false, errGone
	case stateRunning:
		// As in E2B, connecting never shortens a running sandbox's life.
		if time.Now().Add(timeout).After(s.endAt) {
			s.armLocked(timeout)
		}
		return false, nil
	}
	if err := s.thaw(); err != nil {
		return false, err
	}
	s.state = stateRunning
	s.armLocked(timeout)
	return true, nil
}

// kill ends the tree, removes the sandbox's data and forgets it.
func (s *sandbox) kill(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateKilled {
		return errGone
	}
	s.state = stateKilled
	s.disarmLocked()
	s.rt.forget(s.id)
	// A caller that goes away (an HTTP client) must not leave a half-torn
	// down tree, cgroup or uid behind.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return s.teardown(ctx)
}

func (s *sandbox) teardown(ctx context.Context) error {
	s.rt.busy.Add(1)
	defer s.rt.busy.Add(-1)
	var errs []error
	if s.cg != nil {
		// Freezing first means no task can fork while we signal the group.
		_ = s.cg.Freeze(ctx)
		if pids, err := s.cg.Procs(); err == nil {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = s.cg.Thaw()
	}
	if s.proc != nil {
		s.proc.Kill()
		select {
		case <-s.proc.Done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("wait for sandbox %s to exit: %w", s.id, ctx.Err()))
		}
	}
	if s.net != nil {
		errs = append(errs, s.net.stop(ctx))
	}
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	if s.proc != nil && !s.proc.Exited() {
		// The tree may still run as its host uid: handing the uid to a new
		// sandbox would let the two signal and read each other, and its
		// files are still being written. Finish once it is gone.
		s.rt.busy.Add(1)
		go s.releaseWhenGone()
		return errors.Join(errs...)
	}
	return errors.Join(append(errs, s.release(ctx))...)
}

// release frees what a dead tree held: its cgroup, files and host uid.
func (s *sandbox) release(ctx context.Context) error {
	var errs []error
	if s.cg != nil {
		errs = append(errs, s.cg.Destroy(ctx))
	}
	dirs := []string{s.rt.fs.SocketPath(s.hostKey), s.rt.fs.SandboxDir(s.hostKey), s.rt.fs.HomeImage(s.hostKey), s.rt.fs.HomeIDFile(s.hostKey)}
	if s.homeMounted {
		// Removing the dir while the image is mounted would empty the
		// image instead of freeing it; keep the files if it stays mounted.
		if err := jail.UnmountHome(s.rt.fs.HomeDir(s.hostKey)); err != nil {
			errs = append(errs, err)
			dirs = dirs[:1]
		}
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	s.uid.Release()
	return errors.Join(errs...)
}

// releaseWhenGone finishes a teardown whose tree outlived it. If the runtime
// closes first the uid stays locked until our process exits, which is the
// safe side: the tree dies with us.
func (s *sandbox) releaseWhenGone() {
	defer s.rt.busy.Add(-1)
	select {
	case <-s.proc.Done:
	case <-s.rt.ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.rt.ctx), 10*time.Second)
	defer cancel()
	if err := s.release(ctx); err != nil {
		s.rt.log.Error("e2blocal: release sandbox after its tree exited", "sandbox", s.id, "error", err)
	}
}

// watch reaps a sandbox whose tree died on its own (agent crash, OOM).
func (s *sandbox) watch() {
	<-s.proc.Done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.kill(ctx); !errors.Is(err, errGone) {
		// Nobody asked for this: keep the agent's last words.
		s.rt.log.Warn("e2blocal: sandbox died", "sandbox", s.id, "error", s.proc.Err, "agentOutput", s.proc.Stderr.String())
	}
}

// newTransport dials the agent's unix socket whatever the request's host.
func newTransport(socket string) *http.Transport {
	var d net.Dialer
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
}

func (s *sandbox) socketPath() string { return s.rt.fs.SocketPath(s.hostKey) }

// homeOwner is the host uid that owns /home/user: user's.
func (s *sandbox) homeOwner() int {
	if s.userUID >= 0 {
		return s.userUID
	}
	return s.hostUID
}
