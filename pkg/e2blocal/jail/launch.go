//go:build linux

package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/agent"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/agentinit"
)

// Paths inside every sandbox.
const (
	InsideHome  = "/home/user"
	insideAgent = agentinit.InsidePath
	// InsideKernel is where the compiled kernel is bound, when there is one.
	InsideKernel = "/opt/e2b/kernel.pyc"
	insideUID    = 1000
	agentEnvVar  = agentinit.EnvVar
	// insideSbin holds sudo, first in PATH so a host's setuid sudo (which
	// cannot work under no_new_privs) never shadows it.
	insideSbin = "/opt/e2b/sbin"
	// insideBin holds the commands E2B's image has and a host may lack
	// (python): last in PATH, so the host's own come first.
	insideBin   = "/opt/e2b/bin"
	SandboxPath = insideSbin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + insideBin
)

// LaunchSpec is everything bwrap needs to build one sandbox.
type LaunchSpec struct {
	Bwrap    string
	AgentBin string // host path of the agent executable (Config.Agent or the runtime's own)
	Kernel   string // host path of the compiled kernel; "" binds none
	EtcDir   string // generated /etc
	HomeDir  string // host dir bound at /home/user
	Socket   string // host path of the agent's unix socket (never bound inside)
	HostUID  int    // unprivileged host uid the tree runs as; -1 keeps ours
	TmpBytes int64  // size cap of the private /tmp
	Resolv   string // host file bound over /etc/resolv.conf; "" keeps the generated one
	Seccomp  []byte // BPF program bwrap installs before the agent runs; nil installs none
	Python   string // the interpreter `python` names inside
	// System binds a template's root filesystem (RootfsBinds) in place of
	// the host's system directories; nil binds the host's.
	System []string
	// UserUID is the host uid of `user` when the sandbox also has root:
	// bwrap's own uid (hostUID) is then root inside, and the runtime writes
	// a two-id map (writeIDMaps). -1: `user` is the only id, bwrap's.
	UserUID int

	// Descriptor numbers in bwrap, set by spawnAgent.
	seccompFD, blockFD, infoFD int
}

// rootCaps are what root keeps inside a sandbox that has root: enough to act
// as any of the sandbox's own ids and over their files. Capabilities in the
// sandbox's user namespace apply only to what it owns (ids it maps), so
// none of these reaches the host; CAP_SYS_ADMIN is not among them.
var rootCaps = []string{
	"CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH",
	"CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
}

// bwrapArgs builds the bubblewrap command line running inner as the
// sandbox's workload. Facts it relies on (bwrap 0.8, Debian bookworm):
//   - bwrap is not setuid here, so every namespace comes from an unprivileged
//     user namespace created by the host uid it was started as; unprivileged
//     user namespaces are enabled on this kernel (6.18) for non-root uids.
//   - Started as root it would map the sandbox user to host root, which is
//     why the runtime drops to hostUID before exec'ing bwrap.
//   - /bin, /lib, /lib64 and /sbin are merged-usr symlinks on Debian; they
//     are recreated as symlinks, a real directory is bound read-only.
//   - --die-with-parent makes the sandbox's pid 1 die with bwrap, and pid 1
//     dying kills its whole pid namespace.
func (s LaunchSpec) bwrapArgs(inner ...string) []string {
	// The tree always has its own network namespace, with only lo unless
	// slirp4netns attaches tap0 to it afterwards (slirp.go); --share-net
	// would expose the host's loopback services.
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--hostname", "e2b"}
	if s.UserUID >= 0 {
		// bwrap creates the user namespace, then waits on blockFD while the
		// runtime maps root and user; the agent runs as root with rootCaps.
		a = append(a, "--unshare-user", "--uid", "0", "--gid", "0",
			"--userns-block-fd", strconv.Itoa(s.blockFD), "--info-fd", strconv.Itoa(s.infoFD))
		for _, c := range rootCaps {
			a = append(a, "--cap-add", c)
		}
	} else {
		a = append(a, "--uid", strconv.Itoa(insideUID), "--gid", strconv.Itoa(insideUID))
	}
	a = append(a, s.systemDirs()...)
	// Directories bwrap makes for mount points are root's and 0700: user
	// must traverse them when root is someone else.
	for _, d := range []string{"/home", "/opt", "/opt/e2b", insideBin, insideSbin} {
		a = append(a, "--perms", "0755", "--dir", d)
	}
	a = append(a, "--ro-bind", s.EtcDir, "/etc")
	if s.Resolv != "" {
		a = append(a, "--ro-bind", s.Resolv, "/etc/resolv.conf")
	}
	size := strconv.FormatInt(s.TmpBytes, 10)
	// bwrap's --dev is an unlimited writable tmpfs: /dev/shm gets the /tmp
	// cap (--perms and --size apply to the next --tmpfs only) and /dev itself
	// is remounted read-only afterwards; the /dev/pts and /dev/shm mounts
	// below it keep their own flags.
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/tmp",
		"--symlink", "/tmp", "/var/tmp",
		"--bind", s.HomeDir, InsideHome,
		"--ro-bind", s.AgentBin, insideAgent,
	)
	if s.Kernel != "" {
		a = append(a, "--ro-bind", s.Kernel, InsideKernel)
	}
	if s.Python != "" {
		a = append(a, "--symlink", s.Python, insideBin+"/python")
	}
	if s.UserUID >= 0 {
		a = append(a, "--perms", "0700", "--size", size, "--tmpfs", "/root",
			"--symlink", insideAgent, insideSbin+"/sudo")
	}
	a = append(a,
		"--clearenv",
		"--setenv", "PATH", SandboxPath,
		"--setenv", "HOME", InsideHome,
		"--setenv", "USER", "user",
		"--setenv", "LOGNAME", "user",
		"--setenv", "SHELL", "/bin/bash",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "TMPDIR", "/tmp",
		"--chdir", InsideHome)
	if s.Seccomp != nil {
		a = append(a, "--seccomp", strconv.Itoa(s.seccompFD))
	}
	a = append(a, "--")
	return append(a, inner...)
}

// systemDirs binds the template's root filesystem, or the host's /usr
// with its merged-usr links.
func (s LaunchSpec) systemDirs() []string {
	if s.System != nil {
		return s.System
	}
	a := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	return a
}

// agentArgs runs the agent as the workload.
func (s LaunchSpec) agentArgs() []string {
	a := s.bwrapArgs(insideAgent)
	// --setenv must come before "--": splice the marker in front of it.
	n := len(a) - 2
	out := append([]string{}, a[:n]...)
	out = append(out, "--setenv", agentEnvVar, "1")
	return append(out, a[n:]...)
}

// command prepares bwrap as an unprivileged host uid. Pdeathsig ties the
// tree to the runtime: if the runtime dies, bwrap gets SIGKILL, then its
// --die-with-parent pid 1, then the pid namespace.
func (s LaunchSpec) command(args []string) *exec.Cmd {
	cmd := exec.Command(s.Bwrap, args...)
	cmd.Env = []string{"PATH=" + SandboxPath}
	cmd.Dir = "/"
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if s.HostUID >= 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(s.HostUID), Gid: uint32(s.HostUID), Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
	return cmd
}

// argsFromFile moves bwrap's options (everything before "--") into a
// memfd that bwrap reads with --args fd, leaving "bwrap --args N --
// /opt/e2b/agent" in its command line: /proc/PID/cmdline is world-readable
// and the options name the sandbox's host paths, which hold its id
// (/proc/PID/environ, by contrast, is owner-only, and the memfd is bwrap's
// alone).
func argsFromFile(args []string, fd int) ([]string, *os.File, error) {
	i := slices.Index(args, "--")
	if i < 0 {
		return nil, nil, errors.New("bwrap arguments without --")
	}
	var data []byte
	for _, a := range args[:i] {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, nil, fmt.Errorf("bwrap argument %q holds a NUL", a)
		}
		data = append(append(data, a...), 0)
	}
	mfd, err := unix.MemfdCreate("bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("bwrap args memfd: %w", err)
	}
	f := os.NewFile(uintptr(mfd), "bwrap-args")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("write bwrap args: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("rewind bwrap args: %w", err)
	}
	return append([]string{"--args", strconv.Itoa(fd)}, args[i:]...), f, nil
}

// AgentProc is a started sandbox tree.
type AgentProc struct {
	Cmd    *exec.Cmd
	Stderr *TailBuffer
	Done   chan struct{} // closed when bwrap has exited and been reaped
	Err    error         // bwrap's exit status, valid after done

	CfgW   *os.File // the agent blocks reading its config from here
	ReadyR *os.File // it writes one byte here once it listens
}

// SpawnAgent starts bwrap with the agent inside and sends it base, the
// first part of its config. The agent's Go runtime starts (and with
// base.StandbyKernel its kernel) and then blocks until configure hands it
// its sandbox's part, so a spawned tree can wait in the warm pool before a
// sandbox is asked for.
func SpawnAgent(sp *Spawner, s LaunchSpec, cg Cgroup, base agent.Config) (*AgentProc, error) {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("config pipe: %w", err)
	}
	defer cfgR.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		cfgW.Close()
		return nil, fmt.Errorf("ready pipe: %w", err)
	}
	defer readyW.Close()
	lnFile, err := listenFile(s.Socket)
	if err != nil {
		cfgW.Close()
		readyR.Close()
		return nil, err
	}
	defer lnFile.Close()
	// ExtraFiles[i] is the agent's fd 3+i, in the order agentinit reads them.
	extra := make([]*os.File, 3)
	extra[agentinit.ConfigFD-3], extra[agentinit.ReadyFD-3], extra[agentinit.ListenFD-3] = cfgR, readyW, lnFile
	bw, err := bwrapFiles(&s, len(extra)+3)
	if err != nil {
		cfgW.Close()
		readyR.Close()
		return nil, err
	}
	defer bw.closeChildEnds()
	files := append(extra, bw.childEnds...)
	argv, argsF, err := argsFromFile(s.agentArgs(), len(files)+3)
	if err != nil {
		cfgW.Close()
		readyR.Close()
		bw.closeOurEnds()
		return nil, err
	}
	defer argsF.Close()
	cmd := s.command(argv)
	cmd.ExtraFiles = append(files, argsF)
	p := &AgentProc{Cmd: cmd, Stderr: NewTailBuffer(8 << 10), Done: make(chan struct{}), CfgW: cfgW, ReadyR: readyR}
	cmd.Stdout = p.Stderr
	cmd.Stderr = p.Stderr
	if err := sp.Start(cmd, cg); err != nil {
		p.closePipes()
		bw.closeOurEnds()
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	go func() {
		p.Err = cmd.Wait()
		close(p.Done)
	}()
	if s.UserUID >= 0 {
		bw.closeChildEnds()
		err := writeIDMaps(bw, s.HostUID, s.UserUID)
		bw.closeOurEnds()
		if err != nil {
			p.Kill()
			return nil, fmt.Errorf("map sandbox ids: %w (output: %q)", err, p.Stderr.String())
		}
	}
	// The pipe holds it until the agent reads: a config is far below its
	// buffer, so this never blocks.
	if err := json.NewEncoder(p.CfgW).Encode(base); err != nil {
		p.Kill()
		return nil, fmt.Errorf("send agent config: %w (output: %q)", err, p.Stderr.String())
	}
	return p, nil
}

// Configure sends the agent its sandbox's part of the config and waits
// until it serves.
func (p *AgentProc) Configure(a agent.Assignment, timeout time.Duration) error {
	defer p.closePipes()
	if err := json.NewEncoder(p.CfgW).Encode(a); err != nil {
		return fmt.Errorf("send agent config: %w (output: %q)", err, p.Stderr.String())
	}
	p.CfgW.Close()
	if err := WaitReady(p.ReadyR, timeout); err != nil {
		return fmt.Errorf("agent did not start: %w (output: %q)", err, p.Stderr.String())
	}
	return nil
}

func (p *AgentProc) closePipes() {
	p.CfgW.Close()
	p.ReadyR.Close()
}

// listenFile creates the agent's listening socket. The runtime makes it and
// passes it down, so the sandbox needs no writable directory on the host
// path and cannot replace the socket to intercept its own traffic.
func listenFile(path string) (*os.File, error) {
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on agent socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	f, err := ln.File()
	ln.Close()
	if err != nil {
		return nil, fmt.Errorf("agent socket descriptor: %w", err)
	}
	return f, nil
}

func WaitReady(r *os.File, timeout time.Duration) error {
	if err := r.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("set ready deadline: %w", err)
	}
	var b [1]byte
	if _, err := r.Read(b[:]); err != nil {
		return fmt.Errorf("read readiness: %w", err)
	}
	return nil
}

// Kill ends bwrap's process group; --die-with-parent and the pid namespace
// take everything inside with it.
func (p *AgentProc) Kill() {
	p.closePipes()
	if p.Cmd.Process != nil {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		_ = p.Cmd.Process.Kill()
	}
}

func (p *AgentProc) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// ProcessTree lists pid and all its descendants through /proc children lists.
func ProcessTree(pid int) []int { return ProcessTreeDepth(pid, -1) }

// ProcessTreeDepth stops below maxDepth levels (-1: no limit). Children are
// listed per thread, so every level costs one read per thread.
func ProcessTreeDepth(pid, maxDepth int) []int {
	out := []int{pid}
	depth := map[int]int{pid: 0}
	for i := 0; i < len(out); i++ {
		if maxDepth >= 0 && depth[out[i]] >= maxDepth {
			continue
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					depth[c] = depth[out[i]] + 1
				}
			}
		}
	}
	return out
}
