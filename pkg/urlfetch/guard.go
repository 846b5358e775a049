package urlfetch

import (
	"fmt"
	"net/netip"
	"syscall"

	"github.com/sessionbox/sessionbox/pkg/netpolicy"
)

// BlockedError is a refused dial (netpolicy's).
type BlockedError = netpolicy.BlockedError

// Guard decides which addresses may be dialed: netpolicy's list, the same
// one the local runtime's sandbox egress refuses.
type Guard struct {
	// AllowPrivate lets loopback, private, link-local, shared and
	// unique-local addresses through (Class.Private).
	AllowPrivate bool
}

// Check returns a *BlockedError for an address the guard refuses.
func (g Guard) Check(addr netip.Addr) error {
	return netpolicy.Policy{AllowPrivate: g.AllowPrivate}.Check(addr)
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
