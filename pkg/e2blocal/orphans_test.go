//go:build linux

package e2blocal

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/diskspace"
)

const recoverKey = "recoverHome"

// deadRuntimeHome leaves in dataDir what a runtime that was killed leaves
// of a created sandbox's plain-dir home: the dir, named by its host key,
// with files, and the id file naming sandbox id. As root the files belong
// to another (dead) lease's uids, user's and root's.
func deadRuntimeHome(t *testing.T, dataDir, id string) {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	homes := filepath.Join(dataDir, fmt.Sprintf("rt-%d-x", dead.Process.Pid), "sandboxes")
	home := filepath.Join(homes, "k1")
	for p, body := range map[string]string{"acked/1.txt": "write 1", "rootfile": "root's"} {
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(homes, "k1.id"), []byte(id), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return
	}
	const oldUser, oldRoot = 150123, 150000
	for _, p := range []string{home, filepath.Join(home, "acked"), filepath.Join(home, "acked/1.txt")} {
		if err := os.Lchown(p, oldUser, oldUser); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(filepath.Join(home, "rootfile"), oldRoot, oldRoot); err != nil {
		t.Fatal(err)
	}
}

// traversableDir is a data dir every uid may traverse, so a root runtime
// keeps its homes in it rather than in a temp dir.
func traversableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "orphans-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdoptPlainHome: homes kept plain (not root, or DiskMB < 0) are
// recovered after a runtime died as images are: a create naming the dead
// sandbox gets its files, owned by its own user (who writes there), and
// its metadata keeps the key; the orphan is gone from the orphan dir, and
// a create naming an unknown sandbox gets an empty home without the key.
func TestAdoptPlainHome(t *testing.T) {
	dataDir := traversableDir(t)
	deadRuntimeHome(t, dataDir, "sbxdead")
	rt := startRuntime(t, Config{DataDir: dataDir, DiskMB: -1, WarmPool: -1, RecoverHomes: recoverKey})
	if _, err := os.Stat(rt.fs.OrphanHome("sbxdead")); err != nil {
		t.Fatalf("the dead runtime's home was not salvaged: %v", err)
	}
	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "metadata": map[string]string{recoverKey: "sbxdead"}})
	if metadataOf(t, rt, sb.SandboxID)[recoverKey] != "sbxdead" {
		t.Fatalf("metadata %v: want the key kept, the home adopted", metadataOf(t, rt, sb.SandboxID))
	}
	got := mustRun(t, rt, sb, "cat /home/user/acked/1.txt; echo; stat -c '%u %g' /home/user/acked /home/user/acked/1.txt; echo x > /home/user/acked/2.txt && echo wrote")
	if want := "write 1\n1000 1000\n1000 1000\nwrote\n"; got != want {
		t.Fatalf("the adopted home: %q, want %q", got, want)
	}
	if os.Geteuid() == 0 {
		if got := runAs(t, rt, sb, "root", "stat -c '%u %g' /home/user/rootfile"); strings.TrimSpace(got.stdout) != "0 0" {
			t.Fatalf("a file of the old root: %+v, want root's", got)
		}
	}
	if _, err := os.Lstat(rt.fs.OrphanHome("sbxdead")); err == nil {
		t.Fatal("the adopted home is still an orphan")
	}
	fresh := createSandbox(t, rt, map[string]any{"templateID": "base", "metadata": map[string]string{recoverKey: "sbxunknown"}})
	if md := metadataOf(t, rt, fresh.SandboxID); md[recoverKey] != "" {
		t.Fatalf("metadata %v: an unknown home reported adopted", md)
	}
	if got := mustRun(t, rt, fresh, "ls -A /home/user | grep -c acked || true"); strings.TrimSpace(got) != "0" {
		t.Fatalf("a fresh home holds %q", got)
	}
}

// TestOrphanExpires: an orphan no create adopted within OrphanTTL is
// removed while the runtime runs.
func TestOrphanExpires(t *testing.T) {
	dataDir := traversableDir(t)
	deadRuntimeHome(t, dataDir, "sbxdead")
	rt := startRuntime(t, Config{DataDir: dataDir, DiskMB: -1, WarmPool: -1, RecoverHomes: recoverKey, OrphanTTL: 2 * time.Second})
	if _, err := os.Stat(rt.fs.OrphanHome("sbxdead")); err != nil {
		t.Fatalf("the dead runtime's home was not salvaged: %v", err)
	}
	err := testwait.Poll(t, 30*time.Second, func() error {
		if _, err := os.Lstat(rt.fs.OrphanHome("sbxdead")); err == nil {
			return fmt.Errorf("the orphan is still there")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sb := createSandbox(t, rt, map[string]any{"templateID": "base", "metadata": map[string]string{recoverKey: "sbxdead"}})
	if md := metadataOf(t, rt, sb.SandboxID); md[recoverKey] != "" {
		t.Fatalf("metadata %v: an expired home reported adopted", md)
	}
}

// TestOrphanImagesCountAgainstFloor: an orphan image may be adopted and
// grow to DiskMB as a live home may, so with room above the floor for two
// homes and one orphan waiting, a second create is refused with 507; once
// the orphan expires the room is back.
func TestOrphanImagesCountAgainstFloor(t *testing.T) {
	const diskMB = 128
	free := uint64(1<<30 + 2*diskMB<<20)
	rt := startRuntime(t, Config{DiskMB: diskMB, WarmPool: -1, RecoverHomes: recoverKey, OrphanTTL: time.Hour,
		HomeFloor: &diskspace.Floor{MinFree: 1 << 30, Statfs: func(string) (uint64, uint64, error) { return free, 100 << 30, nil }}})
	if rt.homes == nil {
		t.Skip("homes are plain dirs here (not root, or no mkfs.ext4)")
	}
	if err := os.MkdirAll(rt.fs.OrphanDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(rt.fs.OrphanImage("sbxdead"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(diskMB << 20); err != nil { // sparse, as a fresh home
		t.Fatal(err)
	}
	f.Close()
	createSandbox(t, rt, nil)
	r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "base"})
	if r.status != http.StatusInsufficientStorage {
		t.Fatalf("a home with room for two and an orphan waiting: %d %s", r.status, r.body)
	}
	rt.expireOrphans(time.Now().Add(2 * time.Hour))
	if _, err := os.Lstat(rt.fs.OrphanImage("sbxdead")); err == nil {
		t.Fatal("the expired orphan image is still there")
	}
	createSandbox(t, rt, nil)
}

// metadataOf is sandbox id's metadata, as a GET returns it.
func metadataOf(t *testing.T, rt *Runtime, id string) map[string]string {
	t.Helper()
	r := api(t, rt, "GET", "/sandboxes/"+id, nil)
	if r.status != http.StatusOK {
		t.Fatalf("get %s: %d %s", id, r.status, r.body)
	}
	var b listedBody
	r.decode(t, &b)
	return b.Metadata
}
