//go:build linux

package e2blocal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

func TestIsolationFilesystem(t *testing.T) {
	rt := startRuntime(t, Config{TmpBytes: 8 << 20, MaxFileBytes: 4 << 20})
	sb := createSandbox(t, rt, nil)
	cases := []struct {
		name   string
		script string
	}{
		{"no host shadow", `! cat /etc/shadow && ! ls /etc/shadow`},
		{"generated passwd", `[ "$(cut -d: -f1 /etc/passwd | tr '\n' ' ')" = "root user nobody " ]`},
		{"groups", `grep -q '^user:x:1000:' /etc/group && grep -q '^root:x:0:' /etc/group`},
		{"not the host's etc", `[ ! -e /etc/machine-id ] && [ ! -e /etc/ssh ] && [ "$(cat /etc/hostname)" = e2b ]`},
		{"ca certificates", `[ -s /etc/ssl/certs/ca-certificates.crt ]`},
		{"read-only usr", `! touch /usr/x 2>/dev/null && ! touch /usr/bin/x 2>/dev/null && ! touch /bin/x 2>/dev/null`},
		{"read-only etc", `! touch /etc/x 2>/dev/null && ! echo hacker >> /etc/passwd`},
		{"lib is usable", `python3 -c 'import ssl, json, sqlite3'`},
		{"writable home", `echo hi > ~/f && [ "$(cat /home/user/f)" = hi ] && [ "$PWD" = /home/user ]`},
		{"private tmp capped", `[ "$(stat -c %a /tmp)" = 1777 ] && ! head -c 16M /dev/zero > /tmp/big 2>/dev/null`},
		{"file size limit", `! (head -c 8M /dev/zero > ~/big) 2>/dev/null; [ "$(stat -c %s ~/big)" -le 4194304 ]`},
		{"no core dumps", `[ "$(ulimit -c)" = 0 ]`},
		{"no host processes", `[ "$(ls -d /proc/[0-9]* | wc -l)" -lt 10 ]`},
		{"minimal dev", `[ -c /dev/null ] && [ ! -e /dev/sda ] && [ ! -e /dev/mem ] && [ ! -e /dev/kmsg ]`},
		{"read-only dev", `! touch /dev/x 2>/dev/null && ! mkdir /dev/d 2>/dev/null && [ ! -e /dev/x ]`},
		{"usable dev nodes", `echo hi > /dev/null && [ "$(head -c 3 /dev/zero | wc -c)" = 3 ] && [ -d /dev/pts ] && [ -e /dev/ptmx ]`},
		{"shm capped", `[ "$(stat -c %a /dev/shm)" = 1777 ] && echo s > /dev/shm/ok && ! head -c 16M /dev/zero > /dev/shm/big 2>/dev/null && [ "$(stat -c %s /dev/shm/big)" -le 8388608 ]`},
		{"no capabilities", `grep -q '^CapEff:\s*0000000000000000' /proc/self/status`},
		{"agent socket not in the sandbox", `[ ! -e /run/e2b ] && ! find / -xdev -type s 2>/dev/null | grep -q .`},
		{"agent is not inspectable", `! ls /proc/2/fd 2>/dev/null && ! cat /proc/2/environ 2>/dev/null && [ "$(cat /proc/2/comm)" = agent ]`},
		{"no inherited descriptors", `[ "$(ls /proc/self/fd | tr '\n' ' ')" = "0 1 2 3 " ]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustRun(t, rt, sb, c.script) })
	}
}

func TestIsolationIdentity(t *testing.T) {
	rt := startRuntime(t, Config{})
	a := createSandbox(t, rt, nil)
	b := createSandbox(t, rt, nil)
	if got := strings.TrimSpace(mustRun(t, rt, a, `echo $(id -u) $(id -g) $(id -un) && touch ~/owned`)); got != "1000 1000 user" {
		t.Fatalf("inside identity %q", got)
	}
	uids := map[int]bool{}
	for _, sb := range []sandboxBody{a, b} {
		s := rt.lookup(sb.SandboxID)
		for _, pid := range jail.ProcessTree(s.proc.Cmd.Process.Pid) {
			uid := hostUIDOf(t, pid)
			if os.Geteuid() == 0 && (uid == 0 || (uid != s.hostUID && uid != s.userUID)) {
				t.Fatalf("sandbox %s pid %d runs as host uid %d, want %d or %d", sb.SandboxID, pid, uid, s.hostUID, s.userUID)
			}
			if s.cg != nil {
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
				if !strings.Contains(string(cg), s.hostKey) {
					t.Fatalf("pid %d is not in the sandbox's cgroup: %s", pid, cg)
				}
			}
		}
		uids[s.hostUID] = true
	}
	if os.Geteuid() != 0 {
		return
	}
	if len(uids) != 2 {
		t.Fatalf("sandboxes share a host uid: %v", uids)
	}
	fi, err := os.Stat(rt.fs.HomeDir(rt.lookup(a.SandboxID).hostKey) + "/owned")
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != rt.lookup(a.SandboxID).homeOwner() {
		t.Fatalf("file written inside belongs to host uid %d", st.Uid)
	}
}

func hostUIDOf(t testing.TB, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			uid, _ := strconv.Atoi(f[1])
			return uid
		}
	}
	t.Fatalf("no Uid in status of %d", pid)
	return -1
}

func TestIsolationNoHostLoopback(t *testing.T) {
	rt := startRuntime(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	sb := createSandbox(t, rt, nil)
	apiPort := rt.apiLn.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`
for p in %d %d; do
  if timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then echo "reached $p"; exit 1; fi
done
python3 - <<'PY'
import socket
for host in ("127.0.0.1", "localhost", "10.0.2.2", "172.17.0.1"):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, %d)); print("reached", host); raise SystemExit(1)
    except OSError:
        pass
PY
[ "$(awk 'NR>2 {print $1}' /proc/net/dev | tr -d ':' | tr '\n' ' ')" = "lo " ]`, port, apiPort, port)
	mustRun(t, rt, sb, script)
	select {
	case <-accepted:
		t.Fatal("the host listener accepted a connection from the sandbox")
	default:
	}
}

func TestIsolationResourceBombs(t *testing.T) {
	rt := startRuntime(t, Config{MemoryBytes: 128 << 20, Pids: 64, MaxOutputBytes: 1 << 20})
	victim := createSandbox(t, rt, nil)
	bystander := createSandbox(t, rt, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Run("memory bomb", func(t *testing.T) {
		r := runIn(ctx, rt, victim, `python3 -c 'x = []
while True: x.append(b"x" * (16 << 20))'`)
		if r.err != nil || r.exit == 0 {
			t.Fatalf("memory bomb was not stopped: exit %d err %v", r.exit, r.err)
		}
		if rt.cgroups == nil {
			t.Skip("no cgroups on this host: the memory limit is an rlimit, checked by the exit status above")
		}
		if used, _, err := rt.lookup(victim.SandboxID).cg.Memory(); err != nil || used > 128<<20 {
			t.Fatalf("memory use %d after the bomb (err %v)", used, err)
		}
	})
	t.Run("interpreter memory bomb", func(t *testing.T) {
		out := execute(t, rt, victim, "y = []\nwhile True: y.append(b'x' * (8 << 20))")
		if !strings.Contains(out, `"type":"error"`) {
			t.Fatalf("bomb in the interpreter did not fail: %s", out)
		}
		if out := execute(t, rt, victim, "1+1"); !strings.Contains(out, `"text":"2"`) {
			t.Fatalf("interpreter unusable after the bomb: %s", out)
		}
	})
	t.Run("fork bomb", func(t *testing.T) {
		done := make(chan cmdResult, 1)
		go func() {
			done <- runIn(ctx, rt, victim, `timeout -s KILL 4 bash -c 'b() { b | b & }; b; sleep 60' 2>/dev/null; exit 0`)
		}()
		// While it rages, the runtime and other sandboxes keep working.
		time.Sleep(1 * time.Second)
		if got := strings.TrimSpace(mustRun(t, rt, bystander, "echo fine")); got != "fine" {
			t.Fatalf("bystander: %q", got)
		}
		if r := do(t, "GET", rt.APIURL()+"/health", nil, nil); r.status != http.StatusOK {
			t.Fatalf("runtime health during fork bomb: %d", r.status)
		}
		if s := rt.lookup(victim.SandboxID); s.cg != nil {
			if pids, _ := s.cg.Procs(); len(pids) > 64 {
				t.Fatalf("%d tasks in a sandbox limited to 64", len(pids))
			}
		}
		if r := <-done; r.err != nil {
			t.Fatalf("fork bomb command: %v", r.err)
		}
		s := rt.lookup(victim.SandboxID)
		if s.cg == nil {
			t.Skip("no cgroups on this host: the task limit is RLIMIT_NPROC, nothing to count it against")
		}
		if pidsLimitHits(t, s.cg) == 0 {
			t.Fatal("the fork bomb never reached the task limit")
		}
		// timeout killed the bomb's whole process group.
		deadline := time.Now().Add(30 * time.Second)
		for pids, _ := s.cg.Procs(); len(pids) > 4; pids, _ = s.cg.Procs() {
			if time.Now().After(deadline) {
				t.Fatalf("fork bomb still has %d tasks", len(pids))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("output flood", func(t *testing.T) {
		// The cap bounds output waiting for a reader, so the reader stalls
		// until all 50 MB are written; what the transport buffers comes on
		// top. The flood is random: Connect compresses messages, and a
		// compressible one would fit many times over in the same buffers.
		marker := rt.fs.HomeDir(rt.lookup(victim.SandboxID).hostKey) + "/flood-done"
		r := runStalled(ctx, rt, victim, `head -c 37500000 /dev/urandom | base64 -w0; touch ~/flood-done`, func() {
			for _, err := os.Stat(marker); err != nil && ctx.Err() == nil; _, err = os.Stat(marker) {
				time.Sleep(50 * time.Millisecond)
			}
		})
		if r.err != nil || r.exit != 0 {
			t.Fatalf("flood command: exit %d err %v", r.exit, r.err)
		}
		// Held back: the 1 MiB cap, the batch being sent, and the socket
		// buffers between agent and reader (a send buffer may autotune to
		// tcp_wmem's 4 MiB): 7 MiB at most seen, 2 under -race.
		t.Logf("received %d bytes of 50000000", len(r.stdout))
		if len(r.stdout) > 16<<20 {
			t.Fatalf("a stalled reader received %d bytes of a flood capped at 1 MiB", len(r.stdout))
		}
		if !strings.Contains(r.stderr, "output dropped") {
			t.Fatalf("no truncation notice on stderr: %q", r.stderr)
		}
	})
	// The victim is still usable once the bombs are gone.
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := runIn(ctx, rt, victim, "echo alive")
		if r.err == nil && strings.TrimSpace(r.stdout) == "alive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("victim unusable after bombs: %+v", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := api(t, rt, "GET", "/sandboxes/"+victim.SandboxID, nil); r.status != http.StatusOK {
		t.Fatalf("victim gone: %d", r.status)
	}
}

func TestKillRemovesTree(t *testing.T) {
	rt := startRuntime(t, Config{})
	sb := createSandbox(t, rt, nil)
	mustRun(t, rt, sb, `nohup sleep 1000 >/dev/null 2>&1 &`)
	s := rt.lookup(sb.SandboxID)
	pids := jail.ProcessTree(s.proc.Cmd.Process.Pid)
	if len(pids) < 4 {
		t.Fatalf("expected bwrap, its init, the agent and sleep; got %v", pids)
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+sb.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d", r.status)
	}
	assertGone(t, pids)
	if r := api(t, rt, "DELETE", "/sandboxes/"+sb.SandboxID, nil); r.status != http.StatusNotFound {
		t.Fatalf("second kill: %d", r.status)
	}
	for _, d := range []string{rt.fs.SandboxDir(s.hostKey), rt.fs.SocketPath(s.hostKey)} {
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s survived the kill", d)
		}
	}
}

// assertGone waits until none of pids exists (zombies count as gone).
func assertGone(t testing.TB, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d survived", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}

// pidsLimitHits reads how often the group's task limit refused a fork.
func pidsLimitHits(t testing.TB, cg jail.Cgroup) int64 {
	t.Helper()
	var path string
	switch g := cg.(type) {
	case *jail.V1Group:
		path = g.Dirs["pids"] + "/pids.events"
	case *jail.V2Group:
		path = g.Dir + "/pids.events"
	}
	return jail.ReadStatField(path, "max")
}

// TestOversizedUpload: the file size limit also bounds uploads, which the
// agent writes itself; the client gets envd's error body, the file it
// would have replaced keeps its old content, nothing of the upload stays
// and the agent keeps serving.
func TestOversizedUpload(t *testing.T) {
	rt := startRuntime(t, Config{MaxFileBytes: 4 << 20})
	sb := createSandbox(t, rt, nil)
	mustRun(t, rt, sb, "printf old > ~/big")
	req, err := http.NewRequest("POST", rt.SandboxURL()+"/files?path=/home/user/big", strings.NewReader(strings.Repeat("x", 8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(hdrSandboxID, sb.SandboxID)
	req.Header.Set(hdrSandboxPort, "49983")
	req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode < 400 || body.Code != resp.StatusCode || body.Message == "" {
		t.Fatalf("oversized upload: %d %+v (%v)", resp.StatusCode, body, err)
	}
	if got := mustRun(t, rt, sb, "cat ~/big; ls -A ~ | grep -c sbx-upload || true"); got != "old0\n" {
		t.Fatalf("home after the oversized upload: %.80q", got)
	}
}

// execute runs code in the sandbox's interpreter and returns the NDJSON.
func execute(t testing.TB, rt *Runtime, sb sandboxBody, code string) string {
	t.Helper()
	return executeIn(t, rt, sb, "", code)
}

// executeIn is execute in a language's default context ("": python's).
func executeIn(t testing.TB, rt *Runtime, sb sandboxBody, lang, code string) string {
	t.Helper()
	fields := map[string]string{"code": code}
	if lang != "" {
		fields["language"] = lang
	}
	body, _ := json.Marshal(fields)
	req, err := http.NewRequest("POST", rt.SandboxURL()+"/execute", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(hdrSandboxID, sb.SandboxID)
	req.Header.Set(hdrSandboxPort, "49999")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("execute: %d %v %s", resp.StatusCode, err, out)
	}
	return string(out)
}
