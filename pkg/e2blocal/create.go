package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
)

// createParams is the parsed body of a create request (v1 or v2).
type createParams struct {
	templateID string
	timeout    time.Duration
	autoPause  bool
	autoResume bool
	secure     bool
	allowNet   *bool
	metadata   map[string]string
	envVars    map[string]string
}

var errClosed = errors.New("runtime is closed")

func (rt *Runtime) create(ctx context.Context, p createParams) (*sandbox, error) {
	id, err := newSandboxID()
	if err != nil {
		return nil, err
	}
	s := &sandbox{
		rt: rt, id: id, templateID: p.templateID, metadata: p.metadata, envVars: p.envVars,
		autoPause: p.autoPause, autoResume: p.autoResume, allowNet: p.allowNet, hostUID: -1,
	}
	if p.secure {
		if s.accessToken, err = newAccessToken(); err != nil {
			return nil, err
		}
	}
	if err := rt.provision(s); err != nil {
		_ = s.teardown(ctx)
		return nil, err
	}
	s.startedAt = time.Now().UTC()
	s.transport = newTransport(s.socketPath())
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		_ = s.teardown(ctx)
		return nil, errClosed
	}
	s.mu.Lock()
	s.armLocked(p.timeout)
	s.mu.Unlock()
	rt.sandboxes[id] = s
	rt.mu.Unlock()
	go s.watch()
	return s, nil
}

// provision allocates the sandbox's uid, dirs and cgroup and starts its tree.
func (rt *Runtime) provision(s *sandbox) error {
	if rt.uids != nil {
		rt.mu.Lock()
		lease, err := rt.uids.acquire()
		rt.mu.Unlock()
		if err != nil {
			return err
		}
		s.uid, s.hostUID = lease, lease.uid
	}
	if err := rt.makeDirs(s); err != nil {
		return err
	}
	if rt.cgroups != nil {
		cg, err := rt.cgroups.create(s.id, limits{MemoryBytes: rt.cfg.MemoryBytes, Pids: rt.cfg.Pids, CPUPercent: rt.cfg.CPUPercent})
		if err != nil {
			return err
		}
		s.cg = cg
	}
	spec := launchSpec{
		bwrap: rt.cfg.Bwrap, agentBin: rt.fs.agentBin(), etcDir: rt.fs.etcDir(),
		homeDir: rt.fs.homeDir(s.id), runDir: rt.fs.runDir(s.id), hostUID: s.hostUID,
		tmpBytes: rt.cfg.TmpBytes,
	}
	proc, err := startAgent(rt.spawn, spec, rt.agentConfig(s), s.joinCgroup, rt.cfg.StartTimeout)
	if err != nil {
		return fmt.Errorf("start sandbox %s: %w", s.id, err)
	}
	s.proc = proc
	// bwrap was moved into the group right after fork, but it may have
	// forked before that; nothing untrusted has run yet, so sweeping the
	// tree now closes the gap.
	for _, pid := range processTree(proc.cmd.Process.Pid) {
		s.joinCgroup(pid)
	}
	return nil
}

func (s *sandbox) joinCgroup(pid int) {
	if s.cg != nil {
		_ = s.cg.add(pid)
	}
}

func (rt *Runtime) makeDirs(s *sandbox) error {
	for _, d := range []string{rt.fs.sandboxDir(s.id), rt.fs.homeDir(s.id), rt.fs.runDir(s.id)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := os.Chmod(rt.fs.sandboxDir(s.id), 0o711); err != nil {
		return fmt.Errorf("chmod sandbox dir: %w", err)
	}
	if s.hostUID < 0 {
		return nil
	}
	for _, d := range []string{rt.fs.homeDir(s.id), rt.fs.runDir(s.id)} {
		if err := os.Chown(d, s.hostUID, s.hostUID); err != nil {
			return fmt.Errorf("chown %s: %w", d, err)
		}
	}
	return nil
}

func (rt *Runtime) agentConfig(s *sandbox) agent.Config {
	nofile := rt.cfg.MaxOpenFiles
	fsize := uint64(rt.cfg.MaxFileBytes)
	rl := []agent.Rlimit{
		{Resource: unix.RLIMIT_CORE, Cur: 0, Max: 0},
		{Resource: unix.RLIMIT_FSIZE, Cur: fsize, Max: fsize},
		{Resource: unix.RLIMIT_NOFILE, Cur: nofile, Max: nofile},
	}
	// RLIMIT_NPROC counts every task of the real uid, so it only means
	// "this sandbox" when each sandbox has its own host uid.
	if s.hostUID >= 0 {
		n := uint64(rt.cfg.Pids)
		rl = append(rl, agent.Rlimit{Resource: unix.RLIMIT_NPROC, Cur: n, Max: n})
	}
	return agent.Config{
		Socket: insideSocket, User: "user", Home: insideHome, Shell: "/bin/bash",
		Python: rt.cfg.Python, Env: s.envVars, AccessToken: s.accessToken,
		MaxOutputBytes: rt.cfg.MaxOutputBytes,
		Rlimits:        rl,
	}
}
