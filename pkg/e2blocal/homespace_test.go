//go:build linux

package e2blocal

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/internal/testwait"
	"github.com/sessionbox/sessionbox/pkg/diskspace"
)

// allocated is the bytes the host gives the file at path.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestHomeDiscard: deleting a file inside a sandbox frees its blocks in
// the home image on the host.
func TestHomeDiscard(t *testing.T) {
	rt := startRuntime(t, Config{DiskMB: 256, WarmPool: -1})
	if rt.homes == nil {
		t.Skip("homes are plain dirs here (not root, or no mkfs.ext4)")
	}
	sb := createSandbox(t, rt, nil)
	img := rt.fs.HomeImage(rt.lookup(sb.SandboxID).hostKey)
	mustRun(t, rt, sb, "dd if=/dev/urandom of=~/big bs=1M count=64 status=none && sync")
	full := allocated(t, img)
	if full < 64<<20 {
		t.Fatalf("after writing 64 MiB the image holds %d bytes", full)
	}
	mustRun(t, rt, sb, "rm ~/big && sync")
	var after int64
	_ = testwait.Poll(t, 10*time.Second, func() error {
		if after = allocated(t, img); after >= full-60<<20 {
			return fmt.Errorf("the image holds %d bytes", after)
		}
		return nil
	})
	t.Logf("image allocated: %d MiB written, %d MiB after the delete", full>>20, after>>20)
	if after > full-60<<20 {
		t.Fatalf("deleting 64 MiB inside the sandbox left the image at %d of %d bytes", after, full)
	}
}

// TestHomeAdmission: a home is admitted only while every home growing to
// DiskMB would leave the floor free on the file system the homes are on
// (the data dir's, or the temp dir's when the data dir is private and the
// runtime keeps them there); past it a create gets 507 naming the floor,
// and a sandbox killed makes room again.
func TestHomeAdmission(t *testing.T) {
	for _, private := range []bool{true, false} {
		t.Run(map[bool]string{true: "private data dir", false: "traversable data dir"}[private], func(t *testing.T) {
			dataDir := t.TempDir() // below a 0700 dir
			if !private {
				var err error
				if dataDir, err = os.MkdirTemp("", "homeadmission-"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
				if err := os.Chmod(dataDir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			testHomeAdmission(t, dataDir, private)
		})
	}
}

func testHomeAdmission(t *testing.T, dataDir string, private bool) {
	const diskMB = 128
	var measured atomic.Value
	// A 1 GiB floor, and room above it for two homes' growth.
	free := uint64(1<<30 + 2*diskMB<<20)
	rt := startRuntime(t, Config{DataDir: dataDir, DiskMB: diskMB, WarmPool: -1, HomeFloor: &diskspace.Floor{MinFree: 1 << 30,
		Statfs: func(dir string) (uint64, uint64, error) { measured.Store(dir); return free, 100 << 30, nil }}})
	if rt.homes == nil {
		t.Skip("homes are plain dirs here (not root, or no mkfs.ext4)")
	}
	if inData := strings.HasPrefix(rt.fs.Shared, dataDir+"/"); inData == private {
		t.Fatalf("homes in %s with the data dir %s (private %v)", rt.fs.Shared, dataDir, private)
	}
	first := createSandbox(t, rt, nil)
	createSandbox(t, rt, nil)
	r := api(t, rt, "POST", "/sandboxes", map[string]any{"templateID": "base"})
	var body apiError
	r.decode(t, &body)
	if r.status != http.StatusInsufficientStorage || !strings.Contains(body.Message, "floor of 1024 MiB") || strings.Contains(body.Message, "/") {
		t.Fatalf("a third home of %d MiB with room for two: %d %s", diskMB, r.status, r.body)
	}
	if got := measured.Load(); got != rt.fs.Shared {
		t.Fatalf("the floor measured %v, want the dir the homes are in, %s", got, rt.fs.Shared)
	}
	if r := api(t, rt, "DELETE", "/sandboxes/"+first.SandboxID, nil); r.status != http.StatusNoContent {
		t.Fatalf("kill: %d", r.status)
	}
	createSandbox(t, rt, nil)
}
