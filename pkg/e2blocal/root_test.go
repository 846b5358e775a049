//go:build linux

package e2blocal

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// runAs runs a bash script as the named sandbox user through envd.
func runAs(t testing.TB, rt *Runtime, sb sandboxBody, user, script string) cmdResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCmd(ctx, rt, sb, user, script, func() {})
}

// TestRootAndSudo checks E2B's two users: `user` by default, root when a
// request names it or through sudo, both only inside the sandbox's user
// namespace.
func TestRootAndSudo(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, map[string]any{"templateID": "code-interpreter-v1"})
	if os.Geteuid() != 0 {
		// Without root on the host the runtime cannot map a second id: the
		// sandbox has user only and says so (TestUnprivilegedRuntime).
		r := runAs(t, rt, sb, "root", "id")
		if r.err == nil || !strings.Contains(r.err.Error(), "invalid username: 'root'") {
			t.Fatalf("root in a single-user sandbox: %+v", r)
		}
		if r := runAs(t, rt, sb, "user", "sudo true 2>/dev/null || echo none"); r.stdout != "none\n" {
			t.Fatalf("sudo in a single-user sandbox: %+v", r)
		}
		return
	}
	cases := []struct{ name, user, script, want string }{
		{"default is user", "user", `id -un; id -u; echo $HOME; pwd`, "user\n1000\n/home/user\n/home/user\n"},
		{"root by request", "root", `id -un; id -u; echo $HOME; pwd`, "root\n0\n/root\n/root\n"},
		{"sudo whoami", "user", `sudo whoami`, "root\n"},
		{"sudo keeps the cwd and exit status", "user", `cd /tmp && sudo bash -c 'pwd; exit 7'; echo "exit $?"`, "/tmp\nexit 7\n"},
		{"sudo of a missing command", "user", `sudo no-such-cmd 2>&1; echo "exit $?"`, "sudo: no-such-cmd: command not found\nexit 1\n"},
		{"sudo -i", "user", `sudo -i pwd`, "/root\n"},
		{"sudo pipes", "user", `echo hi | sudo tee /root/f >/dev/null && sudo cat /root/f`, "hi\n"},
		{"user cannot read root's home", "user", `ls /root 2>/dev/null || echo denied`, "denied\n"},
		{"root owns what it writes", "root", `touch /home/user/r && stat -c %U /home/user/r`, "root\n"},
		{"user's files are user's", "user", `touch ~/u && stat -c %U:%G ~/u`, "user:user\n"},
		{"root can manage user's files", "root", `echo x > /home/user/u && chown user /home/user/r && stat -c %U /home/user/r`, "user\n"},
		{"root has no host shadow", "root", `cat /etc/shadow 2>/dev/null || echo none`, "none\n"},
		{"root cannot write the host's files", "root", `touch /usr/bin/x /etc/x 2>/dev/null || echo refused`, "refused\n"},
		{"root cannot mount or unshare", "root", `mount -t tmpfs x /mnt 2>/dev/null || unshare -U true 2>/dev/null || echo refused`, "refused\n"},
		{"seccomp applies to root", "root", `grep -c '^Seccomp:\s*2' /proc/self/status`, "1\n"},
		{"sudo under seccomp", "user", `sudo grep -c '^Seccomp:\s*2' /proc/self/status`, "1\n"},
		{"root has no CAP_SYS_ADMIN", "root", `python3 -c 'print(int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16) >> 21 & 1)'`, "0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runAs(t, rt, sb, c.user, c.script)
			if r.err != nil || r.stdout != c.want {
				t.Fatalf("got %q (exit %d, err %v, stderr %q), want %q", r.stdout, r.exit, r.err, r.stderr, c.want)
			}
		})
	}
	t.Run("files as each user", func(t *testing.T) {
		post := func(user, path string) int {
			r := do(t, "POST", rt.SandboxURL()+"/files?username="+user+"&path="+path, "data",
				map[string]string{hdrSandboxID: sb.SandboxID, hdrSandboxPort: "49983",
					"X-Access-Token": sb.EnvdAccessToken, "Content-Type": "application/octet-stream"})
			return r.status
		}
		if st := post("root", "/root/by-root"); st != http.StatusOK {
			t.Fatalf("root writes /root: %d", st)
		}
		if st := post("user", "/root/by-user"); st != http.StatusForbidden {
			t.Fatalf("user writes /root: %d, want 403", st)
		}
		if st := post("user", "/home/user/by-user"); st != http.StatusOK {
			t.Fatalf("user writes home: %d", st)
		}
		r := runAs(t, rt, sb, "root", `stat -c %U /root/by-root /home/user/by-user; ls /root/by-user 2>/dev/null || echo absent`)
		if r.stdout != "root\nuser\nabsent\n" {
			t.Fatalf("owners: %+v", r)
		}
	})
	t.Run("host uids", func(t *testing.T) {
		s := rt.lookup(sb.SandboxID)
		if s.userUID < 0 || s.userUID == s.hostUID || s.hostUID == 0 {
			t.Fatalf("sandbox uids: root %d, user %d", s.hostUID, s.userUID)
		}
		if out := execute(t, rt, sb, "import os\nos.getuid()"); !strings.Contains(out, `"1000"`) {
			t.Fatalf("kernel does not run as user: %s", out)
		}
	})
}
