//go:build linux

package e2blocal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// syscallProbe is Python run inside a sandbox: it makes each named syscall
// through libc's syscall() with harmless arguments and prints name=errno.
func syscallProbe(t testing.TB, calls map[string][]uint64) string {
	t.Helper()
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n")
	b.WriteString("def probe(name, nr, *args):\n" +
		"    ctypes.set_errno(0)\n" +
		"    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])\n" +
		"    print('%s=%d' % (name, ctypes.get_errno() if r == -1 else 0))\n")
	for name, args := range calls {
		n, ok := info.SyscallNames[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "probe(%q, %d", name, n)
		for _, a := range args {
			fmt.Fprintf(&b, ", %d", a)
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// deniedProbes are the denied syscalls with arguments a permitted call would
// accept or fail on with another errno than EPERM.
var deniedProbes = map[string][]uint64{
	"unshare":           {unix.CLONE_NEWUSER},
	"clone":             {unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), 0, 0, 0, 0},
	"setns":             {0, 0},
	"mount":             {0, 0, 0, 0, 0},
	"umount2":           {0, 0},
	"pivot_root":        {0, 0},
	"io_uring_setup":    {4, 0},
	"io_uring_enter":    {0, 0, 0, 0, 0},
	"io_uring_register": {0, 0, 0, 0},
	"keyctl":            {0, 0},
	"add_key":           {0, 0, 0, 0, 0},
	"request_key":       {0, 0, 0, 0},
	"bpf":               {0, 0, 0},
	"perf_event_open":   {0, 0, 0, 0, 0},
	"userfaultfd":       {0},
	"kexec_load":        {0, 0, 0, 0},
	"kexec_file_load":   {0, 0, 0, 0, 0},
	"init_module":       {0, 0, 0},
	"finit_module":      {0, 0, 0},
	"delete_module":     {0, 0},
	"open_by_handle_at": {0, 0, 0},
	"name_to_handle_at": {0, 0, 0, 0, 0},
	"reboot":            {0, 0, 0, 0},
	"swapon":            {0, 0},
	"swapoff":           {0},
	"settimeofday":      {0, 0},
	"clock_settime":     {0, 0},
	"acct":              {0},
	"lookup_dcookie":    {0, 0, 0},
	"quotactl":          {0, 0, 0, 0},
	"syslog":            {3, 0, 0},
}

// TestSeccompDeniesInSandbox makes each denied call from inside a sandbox,
// through libc and through the tools a user would reach for, and checks
// that the filter, not a missing capability, is what refuses them: the same
// calls are made in a sandbox without the filter.
func TestSeccompDeniesInSandbox(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, nil)
	mustRun(t, rt, sb, "cat > /tmp/probe.py <<'EOF'\n"+syscallProbe(t, deniedProbes)+"EOF\n")
	out := mustRun(t, rt, sb, "python3 /tmp/probe.py")
	got := map[string]string{}
	for _, line := range strings.Fields(out) {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	eperm := fmt.Sprint(int(unix.EPERM))
	for name := range deniedProbes {
		if _, ok := got[name]; !ok {
			continue // not on this architecture
		}
		if got[name] != eperm {
			t.Errorf("%s: errno %s, want EPERM (%s)", name, got[name], eperm)
		}
	}
	for _, name := range []string{"unshare", "clone", "mount", "io_uring_setup", "bpf"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s was not probed", name)
		}
	}
	scripts := []struct{ name, script string }{
		{"filter installed", `grep -q '^Seccomp:\s*2' /proc/self/status`},
		{"unshare -U", `! unshare -U true 2>/tmp/e && grep -q 'Operation not permitted' /tmp/e`},
		{"unshare -r", `! unshare -r true 2>/dev/null`},
		{"python os.unshare", `python3 -c '
import os, errno
try:
    os.unshare(os.CLONE_NEWUSER)
except AttributeError:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.unshare(0x10000000) == -1 and ctypes.get_errno() == errno.EPERM
except PermissionError:
    pass
else:
    raise SystemExit("unshare succeeded")'`},
		{"clone3 falls back", `python3 -c '
import ctypes, errno, platform
nr = {"x86_64": 435, "aarch64": 435}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
assert libc.syscall(nr, 0, 0) == -1 and ctypes.get_errno() == errno.ENOSYS'`},
		{"threads and processes", `python3 -c '
import threading, subprocess
ts = [threading.Thread(target=lambda: None) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
assert subprocess.run(["true"]).returncode == 0'`},
	}
	for _, c := range scripts {
		t.Run(c.name, func(t *testing.T) { mustRun(t, rt, sb, c.script) })
	}

	t.Run("without the filter", func(t *testing.T) {
		t.Parallel()
		off := startRuntime(t, Config{WarmPool: -1, NoSeccomp: true})
		sb := createSandbox(t, off, nil)
		mustRun(t, off, sb, `grep -q '^Seccomp:\s*0' /proc/self/status`)
		// These succeed without the filter, so the filter is what refuses them.
		mustRun(t, off, sb, `unshare -U true`)
		mustRun(t, off, sb, "cat > /tmp/probe.py <<'EOF'\n"+
			syscallProbe(t, map[string][]uint64{"io_uring_setup": {4, 0}, "keyctl": {0, 0xfffffffd, 0}})+"EOF\n")
		out := mustRun(t, off, sb, "python3 /tmp/probe.py")
		for _, want := range []string{"io_uring_setup=14", "keyctl=0"} {
			// io_uring_setup with a NULL params pointer gets EFAULT, past
			// any permission check; keyctl(GET_KEYRING_ID, session) works.
			if !strings.Contains(out, want) {
				t.Errorf("without the filter: %q lacks %q", out, want)
			}
		}
	})
}

// TestSeccompKeepsWorkloads runs what sandboxes are for under the filter:
// the scientific stack, threads, subprocesses, multiprocessing and a pip
// install from a local wheel (the package index is out of reach here), as
// plain `pip install` thanks to the generated pip.conf.
func TestSeccompKeepsWorkloads(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, nil)
	cases := []struct{ name, script string }{
		{"numpy pandas matplotlib", `MPLBACKEND=Agg python3 -c '
import numpy as np, pandas as pd, matplotlib.pyplot as plt
a = np.linalg.inv(np.eye(50) * 2)
df = pd.DataFrame({"x": np.arange(100), "y": np.random.rand(100)})
assert df.groupby(df.x % 3).y.mean().shape == (3,)
plt.plot(df.x, df.y); plt.savefig("/tmp/p.png")
import os; assert os.path.getsize("/tmp/p.png") > 1000
print(a[0][0])'`},
		{"multiprocessing", `python3 -c '
import multiprocessing as mp
def sq(x): return x * x
if __name__ == "__main__":
    with mp.Pool(2) as p:
        assert p.map(sq, range(10)) == [x * x for x in range(10)]
    q = mp.Queue(); pr = mp.Process(target=q.put, args=(7,)); pr.start(); assert q.get() == 7; pr.join()'`},
		{"threads with numpy", `python3 -c '
import numpy as np
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(4) as ex:
    assert sum(ex.map(lambda i: float(np.ones(1000).sum()), range(16))) == 16000.0'`},
		{"subprocesses", `python3 -c '
import subprocess
assert subprocess.check_output(["bash", "-c", "echo $((6*7)) | cat"]).strip() == b"42"'`},
		{"pip install from a wheel dir", `set -e
mkdir -p ~/wheels && cd ~/wheels
python3 - <<'EOF'
import zipfile
files = {
    "hello_e2b/__init__.py": "def hi():\n    return 'hi from wheel'\n",
    "hello_e2b-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hello-e2b\nVersion: 1.0\n",
    "hello_e2b-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
files["hello_e2b-1.0.dist-info/RECORD"] = "".join(n + ",,\n" for n in files) + "hello_e2b-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("hello_e2b-1.0-py3-none-any.whl", "w") as z:
    for n, c in files.items():
        z.writestr(n, c)
EOF
cd ~
pip install --no-index --find-links ~/wheels hello-e2b
python3 -c 'import hello_e2b; assert hello_e2b.hi() == "hi from wheel"'`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustRun(t, rt, sb, c.script) })
	}
	t.Run("kernel execute", func(t *testing.T) {
		out := execute(t, rt, sb, "import numpy as np\nint(np.arange(10).sum())")
		if !strings.Contains(out, "45") {
			t.Fatalf("execute: %s", out)
		}
	})
}
