// Package netpolicy is the one list of addresses sessionbox refuses to
// reach on a user's behalf: loopback, private (RFC 1918, IPv6 unique-local),
// link-local, carrier-grade NAT, multicast, unspecified, broadcast, reserved
// ranges and the cloud metadata endpoints. The URL fetcher's dial guard
// (pkg/urlfetch) and the local runtime's sandbox egress rules
// (pkg/e2blocal) both judge addresses with it, so a URL upload and a
// sandbox with internet access refuse the same destinations.
package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"
)

// Class is why an address may not be reached.
type Class string

// The classes of refused addresses. Those Private covers are reachable when
// a deployment allows private addresses; the others never are by default.
const (
	ClassLoopback    Class = "loopback"
	ClassPrivate     Class = "private"
	ClassLinkLocal   Class = "link-local"
	ClassMetadata    Class = "cloud metadata"
	ClassShared      Class = "carrier-grade NAT (shared address space)"
	ClassUniqueLocal Class = "IPv6 unique-local"
	ClassMulticast   Class = "multicast"
	ClassUnspecified Class = "unspecified"
	ClassBroadcast   Class = "broadcast"
	ClassReserved    Class = "reserved"
)

// Private reports whether c holds addresses of one's own network, which a
// private deployment (and a test) may let users fetch from. Cloud metadata
// is not among them: its credentials are never the user's to read.
func (c Class) Private() bool {
	switch c {
	case ClassLoopback, ClassPrivate, ClassLinkLocal, ClassShared, ClassUniqueLocal:
		return true
	}
	return false
}

// Range is one refused prefix and its class.
type Range struct {
	Prefix netip.Prefix
	Class  Class
}

// ranges are checked in order, so a narrower range (the metadata address)
// comes before the wider one holding it.
var ranges = func() []Range {
	r := func(s string, c Class) Range { return Range{netip.MustParsePrefix(s), c} }
	return []Range{
		// Cloud metadata and credential endpoints: AWS, GCP, Azure and
		// others answer on 169.254.169.254, AWS also on fd00:ec2::254;
		// ECS and EKS serve task credentials on 169.254.170.2/.23.
		r("169.254.169.254/32", ClassMetadata),
		r("169.254.170.2/32", ClassMetadata),
		r("169.254.170.23/32", ClassMetadata),
		r("fd00:ec2::254/128", ClassMetadata),

		r("0.0.0.0/8", ClassUnspecified),
		r("10.0.0.0/8", ClassPrivate),
		r("100.64.0.0/10", ClassShared),
		r("127.0.0.0/8", ClassLoopback),
		r("169.254.0.0/16", ClassLinkLocal),
		r("172.16.0.0/12", ClassPrivate),
		r("192.0.0.0/24", ClassReserved), // IETF protocol assignments
		r("192.0.2.0/24", ClassReserved), // documentation
		r("192.88.99.0/24", ClassReserved),
		r("192.168.0.0/16", ClassPrivate),
		r("198.18.0.0/15", ClassReserved), // benchmarking
		r("198.51.100.0/24", ClassReserved),
		r("203.0.113.0/24", ClassReserved),
		r("224.0.0.0/4", ClassMulticast),
		r("255.255.255.255/32", ClassBroadcast),
		r("240.0.0.0/4", ClassReserved),

		r("::/128", ClassUnspecified),
		r("::1/128", ClassLoopback),
		// IPv4-compatible addresses are deprecated; no public host has one.
		r("::/96", ClassReserved),
		r("64:ff9b:1::/48", ClassReserved), // local-use NAT64
		r("100::/64", ClassReserved),       // discard-only
		r("2001::/23", ClassReserved),      // IETF protocol assignments, Teredo included
		r("2001:db8::/32", ClassReserved),  // documentation
		r("3fff::/20", ClassReserved),      // documentation
		r("5f00::/16", ClassReserved),      // segment routing
		r("fc00::/7", ClassUniqueLocal),
		r("fe80::/10", ClassLinkLocal),
		r("fec0::/10", ClassLinkLocal), // the deprecated site-local range
		r("ff00::/8", ClassMulticast),
	}
}()

// nat64 and sixToFour embed an IPv4 address that the translator or relay
// reaches on the caller's behalf.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Ranges lists the refused prefixes, narrowest first where they nest.
func Ranges() []Range { return append([]Range(nil), ranges...) }

// Embedding lists the IPv6 prefixes whose addresses carry an IPv4 address
// (NAT64, 6to4): Classify judges them by that address, a packet filter,
// which cannot, refuses them whole.
func Embedding() []netip.Prefix { return []netip.Prefix{nat64, sixToFour} }

// Classify says why addr may not be reached, or "" when it is a public
// address. IPv4 addresses written as IPv6 (mapped, NAT64, 6to4) are judged
// by the IPv4 address they reach.
func Classify(addr netip.Addr) Class {
	addr = Reached(addr)
	for _, r := range ranges {
		if r.Prefix.Contains(addr) {
			return r.Class
		}
	}
	return ""
}

// Reached is the address a connection to addr ends up at: the IPv4
// address of an IPv4-mapped, NAT64 or 6to4 one, else addr itself.
func Reached(addr netip.Addr) netip.Addr {
	addr = addr.WithZone("").Unmap()
	if addr.Is6() {
		b := addr.As16()
		switch {
		case nat64.Contains(addr):
			return netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(addr):
			return netip.AddrFrom4([4]byte(b[2:6]))
		}
	}
	return addr
}

// BlockedError is a refused address: the address, the IPv4 address it
// reaches when it embeds one, and why.
type BlockedError struct {
	Addr  netip.Addr
	Class Class
}

// Where is the address in words: "10.0.0.1", or "64:ff9b::a00:1 (IPv4
// 10.0.0.1)" for one that embeds an IPv4 address.
func (e *BlockedError) Where() string {
	if r := Reached(e.Addr); r != e.Addr {
		return fmt.Sprintf("%s (IPv4 %s)", e.Addr, r)
	}
	return e.Addr.String()
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("address %s is %s", e.Where(), e.Class)
}

// Policy decides which addresses may be reached. The zero Policy refuses
// every class.
type Policy struct {
	// AllowPrivate lets loopback, private, link-local, shared and
	// unique-local addresses through (Class.Private).
	AllowPrivate bool
	// Allow opens these prefixes whatever their class: an operator's
	// explicit exception (an internal mirror, a proxy).
	Allow []netip.Prefix
}

// Check returns a *BlockedError for an address the policy refuses.
func (p Policy) Check(addr netip.Addr) error {
	c := Classify(addr)
	if c == "" || p.AllowPrivate && c.Private() || p.allowed(addr) {
		return nil
	}
	return &BlockedError{Addr: addr.WithZone("").Unmap(), Class: c}
}

func (p Policy) allowed(addr netip.Addr) bool {
	for _, a := range []netip.Addr{addr.WithZone("").Unmap(), Reached(addr)} {
		for _, pr := range p.Allow {
			if pr.Contains(a) {
				return true
			}
		}
	}
	return false
}

// ParseAllow reads a comma-separated list of CIDR prefixes ("10.1.0.0/16,
// fd00::/8"); a bare address is its own /32 or /128. "" is an empty list.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix", f)
			}
			f = netip.PrefixFrom(a, a.BitLen()).String()
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix: %w", f, err)
		}
		if p.Addr().Zone() != "" {
			return nil, fmt.Errorf("%q: a prefix has no zone", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
