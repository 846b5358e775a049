//go:build linux

package e2blocal

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

// egressNetnsEnv marks the test binary re-run inside a network namespace
// of its own, where the addresses below stand for the internet and for
// the private networks a sandbox must not reach.
const egressNetnsEnv = "E2BLOCAL_EGRESS_NETNS"

// egressTargets are bound on the namespace's lo; slirp4netns, which runs
// in the runtime's namespace, reaches them as it would the internet.
var egressTargets = []struct {
	addr    string
	public  bool // reachable under the default policy
	allowed bool // reachable with egressAllow
}{
	{"93.184.215.14", true, true}, // stands for a public host
	{"10.9.8.7", false, true},     // private, opened by the allow-list
	{"10.9.9.9", false, false},    // private, beside the allowed prefix
	{"172.20.0.5", false, false},
	{"192.168.50.1", false, false},
	{"169.254.169.254", false, false}, // cloud metadata
	{"169.254.10.10", false, false},   // link-local
	{"100.64.1.1", false, false},      // CGNAT
}

// metadataTarget indexes 169.254.169.254 in egressTargets.
const metadataTarget = 5

var egressAllow = []netip.Prefix{netip.MustParsePrefix("10.9.8.0/24")}

// TestEgressPolicy runs TestEgressPolicyInNetns in a network namespace it
// makes (root, unshare and ip needed), so no address of the host's is
// touched and no internet is needed.
func TestEgressPolicy(t *testing.T) {
	if os.Getenv(egressNetnsEnv) != "" {
		t.Skip("the parent run of this test")
	}
	// The child runs without -short and starts sandboxes, so the parent
	// decides for it.
	e2btest.NeedsSandboxes(t)
	if os.Geteuid() != 0 {
		t.Skip("internet access and a test network namespace need root")
	}
	for _, b := range []string{"unshare", "ip", "nft", "slirp4netns"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not installed", b)
		}
	}
	cmd := exec.Command("unshare", "--net", "--", os.Args[0],
		"-test.run", "^TestEgressPolicyInNetns$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), egressNetnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace of its own:\n%s", out)
	if err != nil {
		t.Fatalf("egress policy test in its namespace: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestEgressPolicyInNetns") {
		t.Fatal("the namespaced test did not run")
	}
}

func TestEgressPolicyInNetns(t *testing.T) {
	if os.Getenv(egressNetnsEnv) == "" {
		t.Skip("run by TestEgressPolicy in a network namespace of its own")
	}
	script := "ip link set lo up"
	for _, tg := range egressTargets {
		script += fmt.Sprintf(" && ip addr add %s/32 dev lo", tg.addr)
	}
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("set up the namespace's addresses: %v: %s", err, out)
	}
	ports := make([]int, len(egressTargets))
	accepted := make([]<-chan struct{}, len(egressTargets))
	for i, tg := range egressTargets {
		ports[i], accepted[i] = listenCount(t, net.JoinHostPort(tg.addr, "0"))
	}
	for _, c := range []struct {
		name  string
		allow []netip.Prefix
	}{{"default", nil}, {"allow-list", egressAllow}} {
		t.Run(c.name, func(t *testing.T) {
			rt := startRuntime(t, Config{WarmPool: -1, InternetAllow: c.allow})
			if rt.noNet != nil {
				t.Fatalf("no internet access in the test namespace: %v", rt.noNet)
			}
			sb := createSandbox(t, rt, map[string]any{"templateID": "base", "allow_internet_access": true})
			for i, tg := range egressTargets {
				want := tg.public
				if c.allow != nil {
					want = tg.allowed
				}
				got := egressReach(t, rt, sb, tg.addr, ports[i])
				if got != want {
					t.Errorf("sandbox reached %s:%d: %v, want %v", tg.addr, ports[i], got, want)
				}
				if want {
					select {
					case <-accepted[i]:
					case <-time.After(5 * time.Second):
						t.Errorf("the listener on %s saw no connection", tg.addr)
					}
					continue
				}
				select {
				case <-accepted[i]:
					t.Errorf("the listener on %s accepted a sandbox's connection", tg.addr)
				default:
				}
			}
			// Root inside has no CAP_NET_ADMIN over its namespace.
			if r := runAs(t, rt, sb, "root", "nft flush ruleset"); r.err != nil || r.exit == 0 {
				t.Errorf("root in the sandbox flushed the egress rules: %+v", r)
			}
			if egressReach(t, rt, sb, egressTargets[metadataTarget].addr, ports[metadataTarget]) {
				t.Error("the metadata address became reachable after root's nft flush")
			}
		})
	}
}

// egressReach reports whether a TCP connect from inside sb to addr:port
// succeeds (slirp completes the guest's handshake only once its own
// connect did).
func egressReach(t *testing.T, rt *Runtime, sb sandboxBody, addr string, port int) bool {
	t.Helper()
	out := mustRun(t, rt, sb, fmt.Sprintf(
		`if timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null; then echo reached; else echo refused; fi`, addr, port))
	return strings.TrimSpace(out) == "reached"
}

// TestInternetNeedsNft: without nft the egress policy cannot hold, so a
// create asking for internet access is refused rather than left unfiltered.
func TestInternetNeedsNft(t *testing.T) {
	rt := startRuntime(t, Config{WarmPool: -1, Nft: "/nonexistent/nft"})
	if rt.noNet == nil || os.Geteuid() == 0 && !strings.Contains(rt.noNet.Error(), "nft") {
		t.Fatalf("internet access without nft: %v", rt.noNet)
	}
	r := api(t, rt, "POST", "/v2/sandboxes", map[string]any{"templateID": "base", "allow_internet_access": true})
	assertErrorBody(t, r, http.StatusBadRequest)
}
