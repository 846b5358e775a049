package store_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/thirdparty"
)

// startDynalite runs dynalite on a free loopback port for the test and
// returns its endpoint (see thirdparty.Dynalite for when it is skipped).
func startDynalite(t *testing.T) string { return thirdparty.Dynalite(t) }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
