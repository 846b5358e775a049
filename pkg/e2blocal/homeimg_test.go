//go:build linux

package e2blocal

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestHomeQuota: a home image of DiskMB stops writes with ENOSPC inside the
// sandbox and 507 on upload, while the image on the host stays bounded;
// the home belongs to the sandbox user and metrics report the image.
func TestHomeQuota(t *testing.T) {
	const diskMB = 64
	rt := startRuntime(t, Config{DiskMB: diskMB})
	if rt.homes == nil {
		t.Fatal("a root runtime with mkfs.ext4 and loop devices must give homes images")
	}
	sb := createSandbox(t, rt, nil)
	s := rt.lookup(sb.SandboxID)
	home, img := rt.fs.HomeDir(s.hostKey), rt.fs.HomeImage(s.hostKey)
	if !mounted(t, home) {
		t.Fatalf("%s is not a mount point", home)
	}
	// The home is the user's and holds no lost+found; what the sandbox's
	// own start writes there meanwhile (the kernel's ~/.local) may be.
	if got := strings.TrimSpace(mustRun(t, rt, sb, "stat -c %U:%u ~ && ls -A ~ | grep -c lost+found || true")); got != "user:1000\n0" {
		t.Fatalf("home owner and lost+found entries: %q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := runIn(ctx, rt, sb, "dd if=/dev/zero of=~/fill bs=1M count=100 status=none")
	if r.err != nil || r.exit == 0 || !strings.Contains(r.stderr, "No space left on device") {
		t.Fatalf("writing past the quota: exit %d err %v stderr %q", r.exit, r.err, r.stderr)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != diskMB<<20 || st.Blocks*512 > diskMB<<20 {
		t.Fatalf("image size %d, allocated %d: want %d at most", st.Size, st.Blocks*512, diskMB<<20)
	}
	m := s.metric()
	if m.DiskTotal > diskMB<<20 || m.DiskTotal < diskMB<<20*9/10 || m.DiskUsed < m.DiskTotal*9/10 {
		t.Fatalf("metrics of a full home: used %d of %d", m.DiskUsed, m.DiskTotal)
	}

	mustRun(t, rt, sb, "rm ~/fill")
	if got := upload(t, rt, sb, "/home/user/big", (diskMB+16)<<20); got != http.StatusInsufficientStorage {
		t.Fatalf("upload past the quota: %d, want 507", got)
	}
	mustRun(t, rt, sb, "rm -f ~/big && echo still writable > ~/ok")

	if r := api(t, rt, "DELETE", "/sandboxes/"+sb.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d", r.status)
	}
	if mounted(t, home) || exists(img) {
		t.Fatalf("after kill: mounted %v, image present %v", mounted(t, home), exists(img))
	}
}

// upload posts size bytes to path through envd and returns the status.
func upload(t testing.TB, rt *Runtime, sb sandboxBody, path string, size int) int {
	t.Helper()
	req, err := http.NewRequest("POST", rt.SandboxURL()+"/files?path="+path, strings.NewReader(strings.Repeat("x", size)))
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
	resp.Body.Close()
	return resp.StatusCode
}

// TestCloseUnmountsHomes: Close leaves no home mounted, whether a sandbox's
// or a warm tree's, and no image.
func TestCloseUnmountsHomes(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := Start(ctx, Config{APIAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", DataDir: t.TempDir(), DiskMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	var homes []string
	for range 2 {
		sb := createSandbox(t, rt, nil)
		homes = append(homes, rt.fs.HomeDir(rt.lookup(sb.SandboxID).hostKey))
	}
	shared := rt.fs.Shared
	if err := rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := mountsBelow(t, shared); len(left) > 0 || exists(shared) {
		t.Fatalf("after Close: mounts %v, runtime dir present %v", left, exists(shared))
	}
	for _, h := range homes {
		if mounted(t, h) {
			t.Fatalf("%s still mounted", h)
		}
	}
}

// TestRuntimeDeathLeavesNoMounts: the homes of a runtime killed hard stay
// mounted until the next runtime starts, on any data dir, which unmounts
// them.
func TestRuntimeDeathLeavesNoMounts(t *testing.T) {
	cmd, _ := startChildRuntime(t)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	marker := "/rt-" + strconv.Itoa(cmd.Process.Pid) + "-"
	if left := mountsWith(t, marker); len(left) == 0 {
		t.Fatal("the dead runtime left no mounted home: the test proves nothing")
	}
	// On another data dir: that runtime leaves the dead one's homes for
	// its own data dir's next runtime, but not mounted.
	startRuntime(t, Config{WarmPool: -1})
	if left := mountsWith(t, marker); len(left) > 0 {
		t.Fatalf("mounts of the dead runtime left after a new start: %v", left)
	}
}

func mounted(t testing.TB, dir string) bool {
	t.Helper()
	for _, p := range mountsWith(t, dir) {
		if p == dir {
			return true
		}
	}
	return false
}

func mountsBelow(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range mountsWith(t, dir) {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

func mountsWith(t testing.TB, part string) []string {
	t.Helper()
	points, err := jail.MountPoints()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range points {
		if strings.Contains(p, part) {
			out = append(out, p)
		}
	}
	return out
}

// TestHomeTemplate: a home copied from the template is empty (its
// lost+found was removed once, in the template), owned by the sandbox's
// uid, and mounted so that the kernel's lazy-init thread leaves it alone;
// the template keeps no backup superblocks. Formatted in place (no
// template), a home still loses its lost+found.
func TestHomeTemplate(t *testing.T) {
	e2btest.NeedsSandboxes(t)
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		template string
	}{
		{"template", filepath.Join(dir, "template.img")},
		{"formatted in place", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, why := jail.DetectHomeImages(true, 64, tc.template, slog.New(slog.DiscardHandler))
			if h == nil {
				t.Fatalf("no image homes: %s", why)
			}
			for i := range 2 {
				home := filepath.Join(dir, tc.name+strconv.Itoa(i))
				if err := os.Mkdir(home, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := h.Mount(context.Background(), home+".img", home, 4242); err != nil {
					t.Fatalf("mount: %v", err)
				}
				t.Cleanup(func() { _ = jail.UnmountHome(home) })
				entries, err := os.ReadDir(home)
				if err != nil || len(entries) != 0 {
					t.Fatalf("home entries %v (%v), want none", entries, err)
				}
				var st syscall.Stat_t
				if err := syscall.Stat(home, &st); err != nil || st.Uid != 4242 {
					t.Fatalf("home owner %d (%v), want 4242", st.Uid, err)
				}
				opts := mountOptions(t, home)
				for _, o := range strings.Split(jail.HomeMountOptions, ",") {
					if !strings.Contains(","+opts+",", ","+o+",") {
						t.Fatalf("home mounted with %q, lacks %s", opts, o)
					}
				}
			}
			if tc.template == "" {
				return
			}
			if h.TmplLostFound {
				t.Fatal("the template kept its lost+found: every home removes its own")
			}
			if ls, err := exec.Command("debugfs", "-R", "ls /", tc.template).Output(); err != nil || strings.Contains(string(ls), "lost+found") {
				t.Fatalf("template root: %s (%v)", ls, err)
			}
			out, err := exec.Command("dumpe2fs", "-h", tc.template).Output()
			if err != nil {
				t.Fatalf("dumpe2fs: %v", err)
			}
			if !strings.Contains(string(out), "sparse_super2") || strings.Contains(string(out), "Backup block groups:") {
				t.Fatalf("template keeps backup superblocks:\n%s", out)
			}
		})
	}
}

// mountOptions is the super block options mountinfo reports for dir.
func mountOptions(t testing.TB, dir string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && jail.UnescapeMount(f[4]) == dir {
			return f[len(f)-1]
		}
	}
	t.Fatalf("%s is not mounted", dir)
	return ""
}
