//go:build linux

package jail

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData encodes struct seccomp_data for golang.org/x/net/bpf's VM.
// The kernel loads 32-bit words of the struct in native order; the VM loads
// them big-endian, so each word is laid out natively and then byte-swapped.
func seccompData(nr int, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.NativeEndian.PutUint32(b[0:], uint32(nr))
	binary.NativeEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(b[16+8*i:], a)
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(b[i:]))
	}
	return b
}

// TestSeccompProgram runs the assembled program on syscalls as the kernel
// would present them, covering what a sandbox cannot show: other ABIs and
// flag combinations no tool issues.
func TestSeccompProgram(t *testing.T) {
	t.Parallel()
	raw, err := SeccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw)%8 != 0 {
		t.Fatalf("program is %d bytes, not whole sock_filter entries", len(raw))
	}
	var ins []bpf.RawInstruction
	for i := 0; i < len(raw); i += 8 {
		ins = append(ins, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(raw[i:]), Jt: raw[i+2], Jf: raw[i+3],
			K: binary.NativeEndian.Uint32(raw[i+4:]),
		})
	}
	prog, ok := bpf.Disassemble(ins)
	if !ok {
		t.Fatal("program does not disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("program does not verify: %v", err)
	}
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no syscall %s on %s", name, info.Name)
		}
		return n
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	// What glibc's pthread_create passes to clone.
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	id := uint32(info.ID)
	cases := []struct {
		name string
		data []byte
		want uint32
	}{
		{"getpid", seccompData(nr("getpid"), id), allow},
		{"read", seccompData(nr("read"), id, 0, 0, 10), allow},
		{"ptrace", seccompData(nr("ptrace"), id), allow},
		{"clone a thread", seccompData(nr("clone"), id, threadFlags), allow},
		{"clone a process", seccompData(nr("clone"), id, uint64(unix.SIGCHLD)), allow},
		{"clone a user namespace", seccompData(nr("clone"), id, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone a pid namespace", seccompData(nr("clone"), id, unix.CLONE_NEWPID), eperm},
		{"clone a network namespace", seccompData(nr("clone"), id, unix.CLONE_NEWNET), eperm},
		{"clone flags in the high word only", seccompData(nr("clone"), id, 1<<40), allow},
		{"clone3", seccompData(nr("clone3"), id), enosys},
		{"unshare files", seccompData(nr("unshare"), id, unix.CLONE_FILES), allow},
		{"unshare user", seccompData(nr("unshare"), id, unix.CLONE_NEWUSER), eperm},
		{"unshare mount", seccompData(nr("unshare"), id, unix.CLONE_NEWNS), eperm},
		{"unshare time", seccompData(nr("unshare"), id, unix.CLONE_NEWTIME), eperm},
		{"setns", seccompData(nr("setns"), id), eperm},
		{"mount", seccompData(nr("mount"), id), eperm},
		{"io_uring_setup", seccompData(nr("io_uring_setup"), id), eperm},
		{"bpf", seccompData(nr("bpf"), id), eperm},
		{"keyctl", seccompData(nr("keyctl"), id), eperm},
		{"another architecture", seccompData(nr("getpid"), id^1), eperm},
	}
	if info.ID == arch.X86_64.ID {
		cases = append(cases,
			// 32-bit int 0x80: getpid is 20 in i386's table.
			struct {
				name string
				data []byte
				want uint32
			}{"i386 getpid", seccompData(20, uint32(arch.I386.ID)), eperm},
			struct {
				name string
				data []byte
				want uint32
			}{"x32 getpid", seccompData(arch.X32.SyscallNames["getpid"]|arch.X32.SeccompMask, id), enosys},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := vm.Run(c.data)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if uint32(got) != c.want {
				t.Fatalf("got %#x, want %#x", got, c.want)
			}
		})
	}
}
