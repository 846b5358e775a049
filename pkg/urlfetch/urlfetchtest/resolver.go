// Package urlfetchtest helps tests of URL fetching: a resolver whose answers
// the test chooses, so a public-looking name can resolve to a loopback
// test server.
package urlfetchtest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver answers A and AAAA queries from hosts (names without the
// trailing dot, any case) and NXDOMAIN for other names. It speaks DNS over
// an in-memory connection, so no socket is opened and no query leaves the
// process.
func Resolver(hosts map[string][]netip.Addr) *net.Resolver {
	table := map[string][]netip.Addr{}
	for name, addrs := range hosts {
		table[strings.ToLower(strings.TrimSuffix(name, "."))] = addrs
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go serve(server, table)
			return client, nil
		},
	}
}

// serve answers length-prefixed DNS messages (the framing of DNS over TCP,
// which the Go resolver uses on a connection that is not a PacketConn)
// until the client hangs up.
func serve(c net.Conn, table map[string][]netip.Addr) {
	defer c.Close()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		out, err := answer(msg, table)
		if err != nil {
			return
		}
		framed := binary.BigEndian.AppendUint16(nil, uint16(len(out)))
		if _, err := c.Write(append(framed, out...)); err != nil {
			return
		}
	}
}

func answer(msg []byte, table map[string][]netip.Addr) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	addrs, known := table[strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
