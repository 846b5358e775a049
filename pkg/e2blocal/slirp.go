//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// Internet access for a sandbox is user-mode networking: slirp4netns adds
// tap0 to the sandbox's own network namespace and relays its traffic through
// ordinary sockets of the host, so the sandbox never shares the host's
// namespace. Facts this relies on (slirp4netns 1.2.0, Debian bookworm,
// kernel 6.18, checked here):
//   - --disable-host-loopback makes slirp refuse connections to its gateway
//     10.0.2.2, the only address it would otherwise map to the host's
//     127.0.0.1; connections to 127.0.0.0/8 inside stay on the sandbox's lo.
//   - bwrap nests a second user namespace inside the one owning the net
//     namespace, so slirp run as the sandbox's uid would have to join the
//     owning one itself and then open /dev/net/tun from inside it, which
//     the host's 0600 root-owned /dev/net/tun refuses; and slirp's own
//     --enable-sandbox, unprivileged, wants uid 0 mapped in the target's
//     user namespace. So slirp runs as the runtime's uid (root): it joins
//     only the net namespace, opens the tap, then --enable-sandbox pivots it
//     into a tmpfs holding the /etc and /run it sees and drops every
//     capability but CAP_NET_BIND_SERVICE, and --enable-seccomp blocks
//     exec, ptrace, mount, setns and unshare. A non-root runtime gets no
//     internet access.
//   - A root process without capabilities still owns root's files and may
//     signal root's processes. So slirp starts inside a bwrap of its own
//     (no user namespace: bwrap runs as root) with a private pid namespace
//     (no host process to signal), an empty /run (no root-owned sockets)
//     and an /etc holding only the host's resolv.conf, which slirp reads to
//     forward DNS; it stays in the host's network namespace, which it needs.
//   - Readiness: it writes one byte to --ready-fd once tap0 is up with
//     10.0.2.100/24 and a default route via 10.0.2.2 (~5 ms).
//   - It exits when --exit-fd reaches EOF, i.e. when the runtime closes its
//     end or dies; Pdeathsig from the spawner's thread is the second line.
const (
	slirpDNS   = jail.SlirpDNS
	slirpMTU   = "65520"
	slirpIface = "tap0"
)

// slirpProc is one sandbox's running slirp4netns, below its own bwrap.
type slirpProc struct {
	cmd      *exec.Cmd // the outer bwrap
	exitW    *os.File  // closing it tells slirp to exit
	readyR   *os.File  // one byte once tap0 is up
	output   *jail.TailBuffer
	done     chan struct{} // closed once slirp has been reaped
	stopping atomic.Bool   // set by stop: an exit before it is unexpected
}

// netTools are the host binaries internet access needs.
type netTools struct {
	slirp, nsenter, nft string
}

// netSupport reports why internet access cannot be offered, nil when it can.
// Without nft the egress policy (egress.go) cannot be enforced, so there is
// no internet access rather than unfiltered access.
func netSupport(cfg Config) (netTools, error) {
	if os.Geteuid() != 0 {
		return netTools{}, errors.New("internet access needs the runtime to run as root (slirp4netns must open /dev/net/tun)")
	}
	var t netTools
	for _, b := range []struct {
		dst       *string
		path, pkg string
	}{
		{&t.slirp, cfg.Slirp4netns, "slirp4netns"},
		{&t.nsenter, "", "nsenter"},
		{&t.nft, cfg.Nft, "nft"},
	} {
		path := b.path
		if path == "" {
			path = b.pkg
		}
		found, err := exec.LookPath(path)
		if err != nil {
			return netTools{}, fmt.Errorf("internet access needs %s, which is not installed (%v)", b.pkg, err)
		}
		*b.dst = found
	}
	return t, nil
}

// loadEgress loads the egress rules (egress.go) into s's network namespace
// in the background while its agent starts: nft's commit waits on the
// kernel (~0.1 s of wall time on a busy host for ~20 ms of CPU), which need
// not add to a create. It touches no interface, so it cannot race bwrap's
// set-up of lo as slirp would.
func (rt *Runtime) loadEgress(s *sandbox, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		netns, err := s.netns(timeout)
		if err == nil {
			err = applyEgress(rt.net.nsenter, rt.net.nft, netns, rt.egress)
			netns.Close()
		}
		done <- err
	}()
	return done
}

// attachNet starts slirp4netns on the network namespace of a sandbox whose
// agent runs, once loadEgress's rules are in (egress), so the policy holds
// before tap0 exists; s.net.ready then waits for tap0.
func (rt *Runtime) attachNet(s *sandbox, egress <-chan error, timeout time.Duration) error {
	if err := <-egress; err != nil {
		return fmt.Errorf("sandbox %s network: %w", s.id, err)
	}
	netns, err := s.netns(timeout)
	if err != nil {
		return err
	}
	defer netns.Close()
	p, err := startSlirp(rt.spawn, rt.log, s.id, rt.cfg.Bwrap, rt.net.slirp, netns)
	if err != nil {
		return fmt.Errorf("sandbox %s network: %w", s.id, err)
	}
	s.net = p
	return nil
}

// netns opens the network namespace of the tree's pid 1 (bwrap's child),
// waiting for bwrap to have cloned it. The host's own namespace is never
// returned: a sandbox must not be attached there.
func (s *sandbox) netns(timeout time.Duration) (*os.File, error) {
	var host syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &host); err != nil {
		return nil, fmt.Errorf("stat own net namespace: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		f, err := s.childNetns(host.Ino)
		if f != nil || time.Now().After(deadline) {
			return f, err
		}
		if s.proc.Exited() {
			return nil, fmt.Errorf("sandbox %s exited before its network was attached", s.id)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func (s *sandbox) childNetns(hostIno uint64) (*os.File, error) {
	kids := jail.ProcessTreeDepth(s.proc.Cmd.Process.Pid, 1)[1:]
	if len(kids) != 1 {
		return nil, fmt.Errorf("sandbox %s: want one process below bwrap, found %d", s.id, len(kids))
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", kids[0]))
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s net namespace: %w", s.id, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Ino == hostIno {
		f.Close()
		return nil, fmt.Errorf("sandbox %s has no net namespace of its own yet (err %v)", s.id, err)
	}
	return f, nil
}

// slirpArgs runs slirp4netns in its confinement (see the facts above).
func slirpArgs(slirp string) []string {
	return []string{
		"--dev-bind", "/", "/", "--proc", "/proc",
		"--tmpfs", "/run", "--tmpfs", "/etc", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session", "--die-with-parent",
		"--", slirp,
		// Descriptors 3, 4 and 5 are ExtraFiles: ready pipe, exit pipe, netns.
		"--configure", "--mtu=" + slirpMTU, "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4",
		"--netns-type=path", "/proc/self/fd/5", slirpIface,
	}
}

func startSlirp(sp *jail.Spawner, log *slog.Logger, id, bwrap, slirp string, netns *os.File) (*slirpProc, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("ready pipe: %w", err)
	}
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, fmt.Errorf("exit pipe: %w", err)
	}
	cmd := exec.Command(bwrap, slirpArgs(slirp)...)
	cmd.Env = []string{"PATH=" + jail.SandboxPath}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{readyW, exitR, netns}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &slirpProc{cmd: cmd, exitW: exitW, readyR: readyR, output: jail.NewTailBuffer(4 << 10), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.output, p.output
	err = sp.Start(cmd, nil)
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		readyR.Close()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	go func() {
		err := cmd.Wait()
		if !p.stopping.Load() {
			// The sandbox lives on offline; keep slirp's last words.
			log.Warn("e2blocal: slirp4netns exited early; the sandbox is offline", "sandbox", id, "error", err, "output", p.output.String())
		}
		close(p.done)
	}()
	return p, nil
}

// ready waits until tap0 is configured. The ready pipe reaches EOF without
// a byte when slirp fails first.
func (p *slirpProc) ready(timeout time.Duration) error {
	defer p.readyR.Close()
	if err := jail.WaitReady(p.readyR, timeout); err != nil {
		return fmt.Errorf("slirp4netns did not come up: %w (output: %q)", err, p.output.String())
	}
	return nil
}

// slirpGrace bounds how long stop waits for slirp to leave on its own.
const slirpGrace = 2 * time.Second

// stop ends slirp and waits until it and its bwrap are gone. Closing the
// exit pipe makes slirp exit; bwrap's init reaps it and reports its status
// to bwrap, which exits at once, so when bwrap is reaped slirp is gone and
// its init may be finishing its own exit (its memory and files already
// released). Should that stall, SIGKILL to bwrap takes the rest along
// through --die-with-parent and the pid namespace.
func (p *slirpProc) stop(ctx context.Context) error {
	p.stopping.Store(true)
	p.exitW.Close()
	p.readyR.Close()
	grace, cancel := context.WithTimeout(ctx, slirpGrace)
	defer cancel()
	select {
	case <-p.done:
		return nil
	case <-grace.Done():
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for slirp4netns to exit: %w", ctx.Err())
	}
}
