//go:build linux

package e2blocal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

// TestSandboxEtcListing compares what a sandbox sees in /etc with what the
// runtime generates and the entries it takes from the host.
func TestSandboxEtcListing(t *testing.T) {
	t.Parallel()
	rt := startRuntime(t, Config{WarmPool: -1})
	sb := createSandbox(t, rt, nil)
	want := map[string]bool{}
	for name := range jail.EtcGenerated {
		want[name] = true
	}
	if _, err := os.Stat(jail.EtcZone); err == nil {
		want["localtime"] = true
	}
	for _, rel := range jail.EtcFromHost {
		if _, err := os.Lstat(filepath.Join("/etc", rel)); err == nil {
			want[strings.SplitN(rel, "/", 2)[0]] = true
		}
	}
	got := strings.Fields(mustRun(t, rt, sb, `ls -A /etc`))
	for _, name := range got {
		if !want[name] {
			t.Errorf("/etc/%s is visible in the sandbox but neither generated nor allowed", name)
		}
		delete(want, name)
	}
	for name := range want {
		t.Errorf("/etc/%s is missing in the sandbox", name)
	}
	mustRun(t, rt, sb, `[ ! -e /etc/environment ] && [ ! -e /etc/profile.d ] && [ ! -e /etc/ssl/private ] &&
		[ "$(cat /etc/pip.conf)" = "$(printf '[global]\nbreak-system-packages = true')" ] &&
		[ "$(date +%Z)" = UTC ] && python3 -c 'import ssl; ssl.create_default_context().load_default_certs()'`)
}
