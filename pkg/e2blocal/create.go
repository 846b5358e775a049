//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// createParams is the parsed body of a create request (v1 or v2).
type createParams struct {
	templateID string
	timeout    time.Duration
	autoPause  bool
	autoResume bool
	secure     bool
	private    bool // network.allowPublicTraffic: false
	allowNet   *bool
	metadata   map[string]string
	envVars    map[string]string
}

func (p createParams) wantsNet() bool { return p.allowNet != nil && *p.allowNet }

var (
	errClosed  = errors.New("runtime is closed")
	errTooMany = errors.New("too many sandboxes")
)

// admit counts a create against MaxSandboxes until it is registered or
// fails, so concurrent creates cannot overshoot the cap together.
func (rt *Runtime) admit() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.sandboxes)+rt.admitted >= rt.cfg.MaxSandboxes {
		return fmt.Errorf("%w: %s", errTooMany, tooManySandboxes(rt.cfg.MaxSandboxes))
	}
	rt.admitted++
	return nil
}

// create turns a warm (or, when the pool is empty, a freshly spawned) tree
// into a sandbox: it hands the agent its config and registers the sandbox.
func (rt *Runtime) create(ctx context.Context, p createParams) (*sandbox, error) {
	if err := rt.admit(); err != nil {
		return nil, err
	}
	admitted := true
	defer func() {
		if admitted {
			rt.mu.Lock()
			rt.admitted--
			rt.mu.Unlock()
		}
	}()
	rt.creating.Add(1)
	rt.demand.record(time.Now(), rt.cfg.WarmPoolWindow)
	rt.busy.Add(1)
	defer rt.busy.Add(-1)
	defer func() {
		rt.lastCreate.Store(time.Now().UnixNano())
		rt.creating.Add(-1)
	}()
	// Cleanup after a failure must finish even if the client went away.
	ctx = context.WithoutCancel(ctx)
	var accessToken, trafficToken string
	var err error
	if p.secure {
		if accessToken, err = newAccessToken(); err != nil {
			return nil, err
		}
	}
	if p.private {
		if trafficToken, err = newAccessToken(); err != nil {
			return nil, err
		}
	}
	// The warm pool holds trees for the default, offline sandbox; one with
	// internet access needs its own resolv.conf bound at spawn.
	// So does one that adopts an earlier home: bwrap binds the home at spawn,
	// and one of a template with its own root filesystem.
	tmpl, _, _ := rt.templates.resolve(p.templateID)
	var s *sandbox
	if adopt := rt.orphanFor(p.metadata); p.wantsNet() || adopt != "" || tmpl.rootfs != "" {
		s, err = rt.prepareAdopting(p.wantsNet(), tmpl, adopt)
	} else {
		s, err = rt.takeWarm(rt.templates.interpreter(p.templateID))
	}
	if err != nil {
		return nil, err
	}
	if err := rt.noteHomeID(s); err != nil {
		return nil, errors.Join(err, s.teardown(ctx))
	}
	s.templateID, s.metadata, s.envVars = p.templateID, rt.recoveredMetadata(p.metadata, s.adopted), p.envVars
	s.tmpl = tmpl
	s.share = shareKey(p.metadata)
	s.autoPause, s.autoResume, s.allowNet = p.autoPause, p.autoResume, p.allowNet
	s.timeout, s.accessToken, s.trafficToken = p.timeout, accessToken, trafficToken
	var egress <-chan error
	if p.wantsNet() {
		egress = rt.loadEgress(s, rt.cfg.StartTimeout)
	}
	err = s.proc.Configure(s.assignment(), rt.cfg.StartTimeout)
	// Its agent serves: the next waiting create's tree may start.
	rt.doneStarting(s)
	if err != nil {
		err = rt.readyFailed(s, err)
		if egress != nil {
			<-egress // bounded by StartTimeout and nft's own timeout
		}
		return nil, errors.Join(fmt.Errorf("start sandbox %s: %w", s.id, err), s.teardown(ctx))
	}
	// slirp4netns attaches only once the agent runs: until bwrap execs it,
	// bwrap may still be configuring lo over netlink, and slirp adding tap0
	// to the namespace meanwhile makes that fail now and then ("loopback:
	// Failed RTM_NEWADDR"). Nothing runs in the sandbox before tap0 is up
	// either way.
	if p.wantsNet() {
		if err := rt.attachNet(s, egress, rt.cfg.StartTimeout); err != nil {
			return nil, errors.Join(err, s.teardown(ctx))
		}
		if err := s.net.ready(rt.cfg.StartTimeout); err != nil {
			return nil, errors.Join(fmt.Errorf("sandbox %s network: %w", s.id, err), s.teardown(ctx))
		}
	}
	s.sweepIntoCgroup()
	s.treePids = treeOf(s)
	s.startedAt = time.Now().UTC()
	s.transport = newTransport(s.socketPath())
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, errors.Join(errClosed, s.teardown(ctx))
	}
	s.mu.Lock()
	s.armLocked(p.timeout)
	s.mu.Unlock()
	rt.sandboxes[s.id] = s
	rt.admitted--
	admitted = false
	rt.mu.Unlock()
	rt.rebalance(s.share)
	go s.watch()
	return s, nil
}

// notReadyError is a create whose template's ready command did not
// succeed within the start timeout: the template's fault, not the host's
// load, and said so to the client without the agent's output.
type notReadyError struct {
	template string
	timeout  time.Duration
}

func (e notReadyError) Error() string {
	return fmt.Sprintf("template '%s': its ready command did not succeed within the sandbox start timeout (%s)", e.template, e.timeout)
}

// readyFailed turns a start that timed out while the template's ready
// command kept failing into notReadyError, logging the command's last
// failure (the agent's output) for the operator.
func (rt *Runtime) readyFailed(s *sandbox, err error) error {
	if s.tmpl.start.ReadyCmd == "" || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	rt.log.Warn("e2blocal: a template's ready command did not succeed in time", "template", s.templateID, "sandbox", s.id, "error", err)
	return notReadyError{template: s.templateID, timeout: rt.cfg.StartTimeout}
}

// prepare allocates a sandbox's uid, dirs and cgroup and spawns its tree;
// the agent then waits for its sandbox's part of the config. With
// standby, its kernel starts meanwhile.
func (rt *Runtime) prepare(withNet, standby bool) (*sandbox, error) {
	return rt.prepareAdopting(withNet, template{interpreter: standby}, "")
}

// prepareAdopting is prepare whose home is the orphan image adopt, when
// that is set and still there, for a sandbox of template tmpl (its root
// filesystem, and its kernel started at once when it has one).
func (rt *Runtime) prepareAdopting(withNet bool, tmpl template, adopt string) (*sandbox, error) {
	standby := tmpl.interpreter
	id, err := newSandboxID()
	if err != nil {
		return nil, err
	}
	hostKey, err := newHostKey()
	if err != nil {
		return nil, err
	}
	s := &sandbox{rt: rt, id: id, hostKey: hostKey, hostUID: -1, userUID: -1, standby: standby, adopt: adopt, tmpl: tmpl, metrics: newMetricRing(int(metricsWindow / rt.cfg.metricsInterval))}
	if err := rt.provision(s, withNet, standby); err != nil {
		return nil, errors.Join(err, s.teardown(context.Background()))
	}
	return s, nil
}

func (rt *Runtime) provision(s *sandbox, withNet, standby bool) error {
	if rt.uids != nil {
		rt.mu.Lock()
		lease, err := rt.uids.Acquire()
		rt.mu.Unlock()
		if err != nil {
			return err
		}
		s.uid, s.hostUID = lease, lease.UID
		// The lease covers the uid UIDCount above it: user's, while the
		// leased one is root's inside the sandbox.
		s.userUID = lease.UID + rt.cfg.UIDCount
	}
	if err := rt.makeDirs(s); err != nil {
		return err
	}
	// The home image is formatted and mounted while the cgroup is made;
	// bwrap binds the home, so both must be done before it starts.
	homeErr := make(chan error, 1)
	go func() { homeErr <- rt.mountHome(s) }()
	var cgErr error
	if rt.cgroups != nil {
		var cg jail.Cgroup
		if cg, cgErr = rt.cgroups.Create(s.hostKey, jail.Limits{MemoryBytes: rt.cfg.MemoryBytes, Pids: rt.cfg.Pids, CPUPercent: rt.cfg.CPUPercent}); cgErr == nil {
			s.cg = cg
		}
	}
	if err := errors.Join(cgErr, <-homeErr); err != nil {
		return err
	}
	spec := jail.LaunchSpec{
		Bwrap: rt.cfg.Bwrap, AgentBin: rt.fs.AgentBin(), Kernel: rt.kernel, EtcDir: rt.fs.EtcDir(),
		HomeDir: rt.fs.HomeDir(s.hostKey), Socket: rt.fs.SocketPath(s.hostKey), HostUID: s.hostUID,
		TmpBytes: rt.cfg.TmpBytes, Seccomp: rt.seccomp, Python: rt.cfg.Python, UserUID: s.userUID,
	}
	if s.tmpl.rootfs != "" {
		// The kernel is compiled for the host's Python, which the
		// template's may not be: its kernel compiles from source.
		spec.System, spec.EtcDir, spec.Kernel = s.tmpl.system, s.tmpl.etcDir, ""
	}
	if withNet {
		spec.Resolv = rt.fs.NetResolvConf()
	}
	proc, err := jail.SpawnAgent(rt.spawn, spec, s.cg, rt.agentBase(s, standby))
	if err != nil {
		return fmt.Errorf("spawn sandbox %s: %w", s.id, err)
	}
	s.proc = proc
	return nil
}

func (s *sandbox) joinCgroup(pid int) {
	if s.cg != nil {
		_ = s.cg.Add(pid)
	}
}

// sweepIntoCgroup makes sure every task of the tree is in the sandbox's
// group. bwrap starts inside it (cgroup.startIn), so normally this finds
// nothing to move; it is the safety net should a task have escaped, and
// runs once the agent serves (the tree is complete) and before anything
// untrusted runs. Attaching costs milliseconds on cgroup v1 (it waits for
// an RCU grace period), so tasks already in the group are skipped. It
// checks bwrap, its init and the agent; a task is born in its parent's
// group, so what the agent started (its standby kernel) is looked at only
// when one of them had to be moved: listing the agent's children means a
// read per agent thread, ~3 ms of CPU on every create.
func (s *sandbox) sweepIntoCgroup() {
	if s.cg == nil {
		return
	}
	root := s.proc.Cmd.Process.Pid
	if s.sweep(jail.ProcessTreeDepth(root, 2)) {
		s.sweep(jail.ProcessTreeDepth(root, 3))
	}
}

// sweep moves the tasks of pids that are outside the group into it and
// says whether there were any.
func (s *sandbox) sweep(pids []int) (moved bool) {
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err == nil && strings.Count(string(data), "/"+s.id+"\n") >= s.cg.Controllers() {
			continue
		}
		s.joinCgroup(pid)
		moved = true
	}
	return moved
}

// makeDirs makes the sandbox's directory, its home (layout.homeDir), or
// puts the plain-dir orphan it is to adopt there.
func (rt *Runtime) makeDirs(s *sandbox) error {
	if s.adopt != "" && rt.homes == nil && rt.adoptDir(s) {
		return nil
	}
	if err := os.Mkdir(rt.fs.HomeDir(s.hostKey), 0o700); err != nil {
		return fmt.Errorf("create home: %w", err)
	}
	if s.hostUID >= 0 {
		if err := os.Chown(rt.fs.HomeDir(s.hostKey), s.homeOwner(), s.homeOwner()); err != nil {
			return fmt.Errorf("chown home: %w", err)
		}
	}
	return nil
}

// mountHome puts the sandbox's size-limited image on its home dir, when
// the runtime makes images.
func (rt *Runtime) mountHome(s *sandbox) error {
	if rt.homes == nil {
		return nil
	}
	done, err := rt.admitHome()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(rt.ctx, jail.HomeMountTimeout)
	defer cancel()
	if s.adopt == "" || !rt.adoptHome(ctx, s) {
		if err := rt.homes.Mount(ctx, rt.fs.HomeImage(s.hostKey), rt.fs.HomeDir(s.hostKey), s.homeOwner()); err != nil {
			return fmt.Errorf("sandbox %s home: %w", s.id, err)
		}
		s.homeMounted = true
	}
	return nil
}

// noteHomeID records which sandbox the home named by s.hostKey belongs to,
// when homes are recovered after a crash (Config.RecoverHomes): the next
// runtime names the salvaged home by that id for its session to adopt.
// Written once a create takes the tree, so the empty homes of warm trees
// are not kept (an image would count against the floor for nothing).
func (rt *Runtime) noteHomeID(s *sandbox) error {
	if rt.cfg.RecoverHomes == "" {
		return nil
	}
	if err := os.WriteFile(rt.fs.HomeIDFile(s.hostKey), []byte(s.id), 0o600); err != nil {
		return fmt.Errorf("sandbox %s home: %w", s.id, err)
	}
	return nil
}

// agentBase is the runtime's part of a sandbox's agent config, known
// when its tree is spawned.
func (rt *Runtime) agentBase(s *sandbox, standby bool) agent.Config {
	nofile := rt.cfg.MaxOpenFiles
	fsize := uint64(rt.cfg.MaxFileBytes)
	rl := []agent.Rlimit{
		{Resource: unix.RLIMIT_CORE, Cur: 0, Max: 0},
		{Resource: unix.RLIMIT_FSIZE, Cur: fsize, Max: fsize},
		{Resource: unix.RLIMIT_NOFILE, Cur: nofile, Max: nofile},
	}
	// RLIMIT_NPROC is checked per user namespace level (kernel >= 5.14
	// ucounts): inside the sandbox's own namespace it counts only that
	// sandbox's tasks, so it bounds a fork bomb even when every sandbox runs
	// as the runtime's own uid (tried: non-root runtime, 6.18).
	n := uint64(rt.cfg.Pids)
	rl = append(rl, agent.Rlimit{Resource: unix.RLIMIT_NPROC, Cur: n, Max: n})
	// Without a memory cgroup the only memory bound left is per process.
	// The Go agent itself maps ~130 MB of data at idle (heap arenas, thread
	// stacks), several hundred MB when built with the race detector, hence
	// the headroom.
	if s.cg == nil {
		m := uint64(rt.cfg.MemoryBytes) + 1<<30
		rl = append(rl, agent.Rlimit{Resource: unix.RLIMIT_DATA, Cur: m, Max: m})
	}
	cfg := agent.Config{
		User: "user", Home: jail.InsideHome, Shell: "/bin/bash", Python: rt.cfg.Python,
		MaxOutputBytes: rt.cfg.MaxOutputBytes, Rlimits: rl, ServeLoopback: true,
		WithRoot: s.userUID >= 0, StandbyKernel: standby,
	}
	if rt.kernel != "" && s.tmpl.rootfs == "" {
		cfg.KernelCompiled = jail.InsideKernel
	}
	if s.tmpl.shell != "" {
		cfg.Shell = s.tmpl.shell
	}
	return cfg
}

// assignment is the sandbox's own part of its agent config.
func (s *sandbox) assignment() agent.Assignment {
	return agent.Assignment{Env: s.tmpl.sandboxEnv(s.envVars), AccessToken: s.accessToken,
		PrewarmKernel: s.tmpl.interpreter, Template: s.tmpl.start}
}
