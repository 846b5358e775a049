//go:build linux

package jail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Every sandbox runs under a seccomp filter that bubblewrap installs (its
// --seccomp option) after it has built the sandbox's namespaces and mounts
// and right before it executes the agent, so bwrap's own setup is not
// filtered while everything in the sandbox, the agent included, is.
//
// The filter allows by default and refuses, with EPERM rather than a kill so
// that programs probing for a feature fall back, the kernel interfaces that
// Docker's default profile withholds from containers and that Python
// workloads do not use: namespaces (unshare and clone with namespace flags,
// setns), mounts, io_uring, keyrings, bpf, perf events, userfaultfd, kexec,
// kernel modules, file handles (open_by_handle_at can walk out of a bind
// mount), reboot, swap, the clock, accounting, quotas, the kernel log and
// x86 port I/O. clone3 gets ENOSYS: its flags sit in memory a filter cannot
// read, and libc falls back to clone, whose flags it can.
//
// ptrace stays allowed, as in Docker on kernels since 4.8: each sandbox is
// its own pid namespace, so only its own processes can be traced, and the
// agent makes itself non-dumpable so sandboxed code cannot trace it.
//
// The audit architecture is checked first: a syscall made through another
// ABI (32-bit int 0x80 on x86_64, AArch32 on arm64) is numbered from another
// table, so it is refused outright rather than matched by number.

// seccompDenied are refused with EPERM whatever their arguments. Names the
// running architecture does not have (ioperm on arm64) are skipped.
var seccompDenied = []string{
	"setns",
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "create_module",
	"open_by_handle_at", "name_to_handle_at",
	"reboot", "swapon", "swapoff",
	"settimeofday", "stime", "clock_settime", "clock_adjtime",
	"acct", "lookup_dcookie", "quotactl", "quotactl_fd", "nfsservctl",
	"syslog", "vhangup", "uselib", "_sysctl", "ustat", "sysfs",
	"iopl", "ioperm", "vm86", "vm86old",
}

// namespaceFlags are the clone and unshare flags that create a namespace.
// CLONE_NEWTIME (0x80) is left to unshare: in clone's first argument that
// bit belongs to the exit signal.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

var (
	retEPERM  = seccomp.Action(uint32(seccomp.ActionErrno) | uint32(unix.EPERM))
	retENOSYS = seccomp.Action(uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS))
)

// seccompPolicy is the filter's policy for one architecture.
func seccompPolicy(info *arch.Info) (seccomp.Policy, error) {
	var names []string
	for _, n := range seccompDenied {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	for _, n := range []string{"mount", "unshare", "clone", "clone3", "setns", "io_uring_setup", "bpf"} {
		if _, ok := info.SyscallNames[n]; !ok {
			return seccomp.Policy{}, fmt.Errorf("architecture %s has no %s in its syscall table", info.Name, n)
		}
	}
	flagsSet := func(name string, mask uint64) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: name, Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: mask},
		}}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: retEPERM},
			{NamesWithCondtions: []seccomp.NameWithConditions{
				flagsSet("unshare", namespaceFlags|unix.CLONE_NEWTIME),
				flagsSet("clone", namespaceFlags),
			}, Action: retEPERM},
			{Names: []string{"clone3"}, Action: retENOSYS},
		},
	}, nil
}

// SeccompProgram assembles the filter for the running architecture into the
// raw form bubblewrap reads from its --seccomp descriptor: struct
// sock_filter entries in native byte order.
func SeccompProgram() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	policy, err := seccompPolicy(info)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble policy: %w", err)
	}
	// The library lets other architectures through to the default action,
	// which is allow: refuse them before its program runs.
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(retEPERM)},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: encode program: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// seccompFile returns a descriptor bwrap reads prog from: a pipe already
// holding it and closed for writing. A program is a few hundred bytes, far
// below a pipe's buffer, so the write never blocks.
func seccompFile(prog []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	_, werr := w.Write(prog)
	cerr := w.Close()
	if werr != nil || cerr != nil {
		r.Close()
		return nil, fmt.Errorf("write seccomp program: %w", errors.Join(werr, cerr))
	}
	return r, nil
}
