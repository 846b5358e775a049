package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/local"
)

// smallDataDir mounts a tmpfs of mb MiB on a fresh directory every uid may
// traverse (so the runtime keeps its homes there, not in /tmp) and returns
// it; the test is skipped unless it runs as root.
func smallDataDir(t *testing.T, mb int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	dir, err := os.MkdirTemp("", "sbx-small-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+itoa(mb)+"m,mode=0755"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		_ = os.Remove(dir)
	})
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	return data
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFullDiskStopAndDelete: with the floor off, a sandbox fills the file
// system its home image and the tables are on; stop and DELETE still
// answer promptly (a write the table emulator could not journal used to
// be applied all the same, so the stop's retry met its own lease and
// waited it out, 300 s), with a problem naming the cause.
func TestFullDiskStopAndDelete(t *testing.T) {
	t.Parallel()
	dir := smallDataDir(t, 256)
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: dir, Keys: []local.Key{alice}, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for _, sid := range []string{"full1", "full2"} {
		base := svc.URL + "/v1/sessions/" + sid
		fill := `{"code":"import os\nf=open('big'+str(os.getpid()),'wb')\ntry:\n  for _ in range(400): f.write(b'x'*(1<<20)); f.flush(); os.fsync(f.fileno())\nexcept OSError as e: print(e)\n"}`
		start := time.Now()
		code, res := call(t, "POST", base+"/execute", alice.Secret, fill)
		t.Logf("%s fill: %d in %v: %v", sid, code, time.Since(start), res)
		var st unix.Statfs_t
		_ = unix.Statfs(dir, &st)
		t.Logf("free after fill: %d MiB", st.Bavail*uint64(st.Bsize)>>20)
		for _, c := range []struct{ method, path string }{{"POST", "/sandbox/stop"}, {"DELETE", ""}} {
			if sid == "full1" && c.method == "DELETE" {
				continue
			}
			start := time.Now()
			code, res := call(t, c.method, base+c.path, alice.Secret, "")
			took := time.Since(start)
			t.Logf("%s %s: %d in %v: %v", c.method, c.path, code, took, res)
			if took > 30*time.Second {
				t.Errorf("%s %s on a full disk took %v", c.method, c.path, took)
			}
			if code >= 500 && code != http.StatusInsufficientStorage {
				t.Errorf("%s %s on a full disk: %d %v", c.method, c.path, code, res)
			}
		}
	}
}

// TestSmallDiskAdmitsHomes: on a small file system, serve refuses a
// sandbox whose home could grow past the floor with 507 naming the floor,
// before anything is filled.
func TestSmallDiskAdmitsHomes(t *testing.T) {
	t.Parallel()
	dir := smallDataDir(t, 256)
	alice, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.Start(t.Context(), local.Config{DataDir: dir, Keys: []local.Key{alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	code, res := call(t, "POST", svc.URL+"/v1/sessions/small/execute", alice.Secret, `{"code":"1"}`)
	if detail, _ := res["detail"].(string); code != http.StatusInsufficientStorage || !strings.Contains(detail, "floor of 12 MiB") || strings.Contains(detail, "/tmp") {
		t.Fatalf("execute with room for no 2 GiB home: %d %v", code, res)
	}
}
