package urlfetch

import (
	"errors"
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want Class
	}{
		{"127.0.0.1", ClassLoopback},
		{"127.255.0.9", ClassLoopback},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassLoopback},
		{"10.1.2.3", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.254", ClassPrivate},
		{"192.168.1.1", ClassPrivate},
		{"::ffff:10.0.0.1", ClassPrivate},
		{"64:ff9b::a00:1", ClassPrivate},   // NAT64 of 10.0.0.1
		{"2002:c0a8:101::1", ClassPrivate}, // 6to4 of 192.168.1.1
		{"169.254.169.254", ClassMetadata}, // AWS, GCP, Azure metadata
		{"::ffff:169.254.169.254", ClassMetadata},
		{"64:ff9b::a9fe:a9fe", ClassMetadata}, // NAT64 of 169.254.169.254
		{"fd00:ec2::254", ClassMetadata},
		{"169.254.170.2", ClassMetadata},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"100.64.0.1", ClassShared},
		{"100.127.255.254", ClassShared},
		{"fc00::1", ClassUniqueLocal},
		{"fd12:3456::1", ClassUniqueLocal},
		{"224.0.0.1", ClassMulticast},
		{"239.255.255.250", ClassMulticast},
		{"ff02::1", ClassMulticast},
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"255.255.255.255", ClassBroadcast},
		{"240.0.0.1", ClassReserved},
		{"192.0.2.1", ClassReserved},
		{"198.18.0.1", ClassReserved},
		{"::7f00:1", ClassReserved}, // IPv4-compatible 127.0.0.1
		{"::a00:1", ClassReserved},  // IPv4-compatible 10.0.0.1
		{"2001:db8::1", ClassReserved},
		{"2001::1", ClassReserved}, // Teredo
		{"64:ff9b:1::1", ClassReserved},

		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"100.128.0.1", ""},
		{"172.32.0.1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2606:4700:4700::1111", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			if got := Classify(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Fatalf("Classify(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

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
