//go:build linux

package jail

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestCgroupV1StartIn: a command started through a v1 group is born in
// the group on every controller, and the starting thread is back in the
// runtime's own groups afterwards, also when several threads start
// commands into different groups at once.
func TestCgroupV1StartIn(t *testing.T) {
	if _, err := os.Stat(CgroupRoot + "/cgroup.controllers"); err == nil {
		t.Skip("a pure cgroup v2 host: v1 startIn is not used here")
	}
	if os.Geteuid() != 0 {
		t.Skip("managing cgroup v1 groups here needs root")
	}
	d, err := newV1Driver(fmt.Sprintf("%d-startin", os.Getpid()))
	if err != nil {
		t.Fatalf("v1 driver: %v", err)
	}
	defer d.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			id := fmt.Sprintf("sbx%d", i)
			cg, err := d.Create(id, Limits{Pids: 16})
			if err != nil {
				t.Error(err)
				return
			}
			defer cg.Destroy(t.Context())
			cmd := exec.Command("cat", "/proc/self/cgroup")
			var out strings.Builder
			cmd.Stdout = &out
			if err := cg.startIn(cmd); err != nil {
				t.Errorf("startIn: %v", err)
				return
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("cat: %v", err)
				return
			}
			if n := strings.Count(out.String(), "/"+id+"\n"); n != cg.Controllers() {
				t.Errorf("the child is in %d of the %d groups of %s:\n%s", n, cg.Controllers(), id, out.String())
			}
			self, err := os.ReadFile("/proc/thread-self/cgroup")
			if err != nil {
				t.Error(err)
				return
			}
			if strings.Contains(string(self), "/sbx") {
				t.Errorf("the starting thread stayed in a sandbox's group:\n%s", self)
			}
		})
	}
	wg.Wait()
}
