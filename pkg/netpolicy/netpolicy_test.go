package netpolicy

import (
	"errors"
	"net/netip"
	"slices"
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

func TestPolicyAllow(t *testing.T) {
	t.Parallel()
	allow, err := ParseAllow(" 10.9.0.0/16, fd12::/16,192.168.7.7 ")
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{Allow: allow}
	tests := []struct {
		addr string
		ok   bool
	}{
		{"10.9.1.2", true},
		{"::ffff:10.9.1.2", true},
		{"64:ff9b::a09:102", true}, // NAT64 of 10.9.1.2
		{"10.8.1.2", false},
		{"192.168.7.7", true},
		{"192.168.7.8", false},
		{"fd12::1", true},
		{"fd13::1", false},
		{"169.254.169.254", false},
		{"8.8.8.8", true},
	}
	for _, tt := range tests {
		err := p.Check(netip.MustParseAddr(tt.addr))
		if (err == nil) != tt.ok {
			t.Errorf("Check(%s) = %v, want allowed %v", tt.addr, err, tt.ok)
		}
		var be *BlockedError
		if err != nil && (!errors.As(err, &be) || be.Class == "") {
			t.Errorf("refusal %v is not a BlockedError naming a class", err)
		}
	}
}

func TestParseAllow(t *testing.T) {
	t.Parallel()
	got, err := ParseAllow("10.1.2.3/16,,::1")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("::1/128")}
	if !slices.Equal(got, want) {
		t.Fatalf("ParseAllow = %v, want %v", got, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "fe80::1%eth0/64", "10.0.0.0/8,x"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}
