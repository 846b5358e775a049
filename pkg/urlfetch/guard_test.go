package urlfetch

import (
	"errors"
	"net/netip"
	"testing"
)

func TestGuardAllowPrivate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr           string
		strict, loosen bool // allowed by default, allowed with AllowPrivate
	}{
		{"127.0.0.1", false, true},
		{"10.0.0.1", false, true},
		{"fd12::1", false, true},
		{"100.64.0.1", false, true},
		{"169.254.1.1", false, true},
		{"169.254.169.254", false, false},
		{"fd00:ec2::254", false, false},
		{"224.0.0.1", false, false},
		{"0.0.0.0", false, false},
		{"255.255.255.255", false, false},
		{"240.0.0.1", false, false},
		{"8.8.8.8", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(tt.addr)
			for _, g := range []struct {
				guard Guard
				want  bool
			}{{Guard{}, tt.strict}, {Guard{AllowPrivate: true}, tt.loosen}} {
				err := g.guard.Check(addr)
				if (err == nil) != g.want {
					t.Fatalf("Guard{AllowPrivate: %v}.Check(%s) = %v, want allowed %v", g.guard.AllowPrivate, addr, err, g.want)
				}
				var be *BlockedError
				if err != nil && (!errors.As(err, &be) || be.Class == "") {
					t.Fatalf("refusal %v is not a BlockedError naming a class", err)
				}
			}
		})
	}
}

func TestControlChecksTheDialedAddress(t *testing.T) {
	t.Parallel()
	g := Guard{}
	tests := []struct {
		network, address string
		ok               bool
	}{
		{"tcp4", "127.0.0.1:80", false},
		{"tcp6", "[::ffff:169.254.169.254]:80", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
		{"tcp4", "93.184.215.14:443", true},
		{"udp4", "93.184.215.14:53", false},
		{"tcp", "example.com:80", false},
	}
	for _, tt := range tests {
		if err := g.Control(tt.network, tt.address, nil); (err == nil) != tt.ok {
			t.Errorf("Control(%s, %s) = %v, want allowed %v", tt.network, tt.address, err, tt.ok)
		}
	}
}
