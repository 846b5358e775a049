package urlfetch

import (
	"fmt"
	"net/netip"
	"syscall"
)

// Class is why an address may not be dialed.
type Class string

// The classes of refused addresses. Those Private covers are reachable when
// the deployment allows private URLs; the others never are.
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

type classRange struct {
	prefix netip.Prefix
	class  Class
}

// ranges are checked in order, so a narrower range (the metadata address)
// comes before the wider one holding it.
var ranges = func() []classRange {
	r := func(s string, c Class) classRange { return classRange{netip.MustParsePrefix(s), c} }
	return []classRange{
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

// Classify says why addr may not be dialed, or "" when it is a public
// address. IPv4 addresses written as IPv6 (mapped, NAT64, 6to4) are judged
// by the IPv4 address they reach.
func Classify(addr netip.Addr) Class {
	addr = reached(addr)
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.class
		}
	}
	return ""
}

// reached is the address a connection to addr ends up at: the IPv4
// address of an IPv4-mapped, NAT64 or 6to4 one, else addr itself.
func reached(addr netip.Addr) netip.Addr {
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

// BlockedError is a refused dial: the address, the IPv4 address it
// reaches when it embeds one, and why.
type BlockedError struct {
	Addr  netip.Addr
	Class Class
}

// Where is the address in words: "10.0.0.1", or "64:ff9b::a00:1 (IPv4
// 10.0.0.1)" for one that embeds an IPv4 address.
func (e *BlockedError) Where() string {
	if r := reached(e.Addr); r != e.Addr {
		return fmt.Sprintf("%s (IPv4 %s)", e.Addr, r)
	}
	return e.Addr.String()
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("address %s is %s", e.Where(), e.Class)
}

// Guard decides which addresses may be dialed.
type Guard struct {
	// AllowPrivate lets loopback, private, link-local, shared and
	// unique-local addresses through (Class.Private).
	AllowPrivate bool
}

// Check returns a *BlockedError for an address the guard refuses.
func (g Guard) Check(addr netip.Addr) error {
	c := Classify(addr)
	if c == "" || g.AllowPrivate && c.Private() {
		return nil
	}
	return &BlockedError{Addr: addr.WithZone("").Unmap(), Class: c}
}

// Control is a net.Dialer Control hook. It runs on the address actually
// being connected, after name resolution, so a name that resolves to a
// public address when checked and a private one when dialed (DNS
// rebinding) gains nothing.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("network %s is not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: not an IP address and port: %w", address, err)
	}
	return g.Check(ap.Addr())
}
