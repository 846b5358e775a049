//go:build linux

package e2blocal

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sessionbox/sessionbox/pkg/netpolicy"
)

// A sandbox with internet access may reach public addresses only: the
// ranges netpolicy refuses (the URL fetcher's list: private, link-local,
// CGNAT, metadata, multicast, ...) are refused unless Config.InternetAllow
// opens them. slirp4netns relays whatever reaches tap0 and has no filter
// of its own, so the rules live in the sandbox's network namespace, in an
// nftables output chain on tap0, set before slirp adds tap0 (no window in
// which the sandbox is online and unfiltered). Only a holder of
// CAP_NET_ADMIN in the user namespace owning that network namespace can
// change them: the sandbox's processes have no such capability (rootCaps
// leaves it out; a nested user namespace owns no rules here), and the host
// uid owning the namespace runs only bwrap.
//
// nft is run through nsenter --net on the namespace's descriptor, so no
// thread of the runtime ever changes namespace. IPv6 is filtered the same
// way although slirp is started without IPv6; NAT64 and 6to4 prefixes,
// which netpolicy judges by the IPv4 address inside, are refused whole.
const egressTable = "sessionbox_egress"

// egressApplyTimeout bounds one nft run (~10 ms here).
const egressApplyTimeout = 10 * time.Second

// egressRules is the nft script for a sandbox namespace, allowing allow.
func egressRules(allow []netip.Prefix) string {
	var refuse4, refuse6, allow4, allow6 []string
	for _, r := range netpolicy.Ranges() {
		refuse4, refuse6 = appendFamily(refuse4, refuse6, r.Prefix)
	}
	for _, p := range netpolicy.Embedding() {
		refuse4, refuse6 = appendFamily(refuse4, refuse6, p)
	}
	for _, p := range allow {
		allow4, allow6 = appendFamily(allow4, allow6, p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", egressTable)
	set := func(name, typ string, elems []string) {
		if len(elems) > 0 {
			fmt.Fprintf(&b, "\tset %s { type %s; flags interval; auto-merge; elements = { %s } }\n", name, typ, strings.Join(elems, ", "))
		}
	}
	set("allow4", "ipv4_addr", allow4)
	set("allow6", "ipv6_addr", allow6)
	set("refuse4", "ipv4_addr", refuse4)
	set("refuse6", "ipv6_addr", refuse6)
	b.WriteString("\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n")
	fmt.Fprintf(&b, "\t\toifname != %q accept\n", slirpIface)
	// slirp's DNS forwarder sits in its private 10.0.2.0/24.
	fmt.Fprintf(&b, "\t\tip daddr %s meta l4proto { tcp, udp } th dport 53 accept\n", slirpDNS)
	if len(allow4) > 0 {
		b.WriteString("\t\tip daddr @allow4 accept\n")
	}
	if len(allow6) > 0 {
		b.WriteString("\t\tip6 daddr @allow6 accept\n")
	}
	b.WriteString("\t\tip daddr @refuse4 reject with icmpx type admin-prohibited\n")
	b.WriteString("\t\tip6 daddr @refuse6 reject with icmpx type admin-prohibited\n")
	b.WriteString("\t}\n}\n")
	return b.String()
}

func appendFamily(v4, v6 []string, p netip.Prefix) ([]string, []string) {
	if p.Addr().Is4() {
		return append(v4, p.String()), v6
	}
	return v4, append(v6, p.String())
}

// applyEgress loads the rules into the network namespace netns.
func applyEgress(nsenter, nft string, netns *os.File, rules string) error {
	ctx, cancel := context.WithTimeout(context.Background(), egressApplyTimeout)
	defer cancel()
	// fd 3 in nsenter is netns (ExtraFiles[0]).
	cmd := exec.CommandContext(ctx, nsenter, "--net=/proc/self/fd/3", "--", nft, "-f", "-")
	cmd.ExtraFiles = []*os.File{netns}
	cmd.Stdin = strings.NewReader(rules)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("load egress rules: %w (output: %q)", err, out.String())
	}
	return nil
}
